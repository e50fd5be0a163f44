package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newSpotCmd keeps the spot command line of the public interface; it
// answers `error unsupported …` until Spots exist.
func newSpotCmd() *cobra.Command {
	var loc, mesh string
	c := &cobra.Command{
		Use:   "spot --location redis://… --mesh NAME KIND ID OP [ARG]",
		Short: "Call a Spot (e.g. counter player-1 add 5) — not implemented yet",
		Args:  cobra.RangeArgs(3, 4),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "error unsupported %v\n", errSpotsUnsupported)
			return errSilent
		},
	}
	c.Flags().StringVar(&loc, "location", "", "Location Store: "+redisURLForms)
	c.Flags().StringVar(&mesh, "mesh", defaultMesh, "MeshName")
	return c
}
