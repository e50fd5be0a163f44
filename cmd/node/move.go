package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
)

func newSpotMoveCmd() *cobra.Command {
	var target adminTarget
	var kind, id, to, mesh string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "spot-move --admin ADDR --kind K --id ID --to RID [--mesh NAME] [--timeout D]",
		Short: "Move one Spot of a persistent kind from a node to another Object Server",
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case kind == "" || id == "" || to == "":
				return usagef("spot-move needs --kind K, --id ID and --to RID")
			case timeout <= 0 || timeout > admin.MaxDrainTimeout:
				return usagef(fmt.Sprintf("--timeout %s: want a positive duration up to %s", timeout, admin.MaxDrainTimeout))
			}
			ac, err := newAdminClient(target, timeout+5*time.Second)
			if err != nil {
				return err
			}
			raw, err := spotAdminCall(cmd, ac, "/spots/move?"+spotAdminQuery("kind", kind, "id", id, "to", to, "mesh", mesh, "timeout", timeout.String()))
			if err != nil {
				return err
			}
			var resp admin.SpotMoveResponse
			if err := json.Unmarshal(raw, &resp); err != nil {
				return printSpotAdminError(cmd.OutOrStdout(), "protocol", "spot-move: "+err.Error())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moved kind=%s id=%s from=%s to=%s mesh=%s\n", resp.Kind, resp.ID, resp.From, resp.To, resp.Mesh)
			return nil
		},
	}
	addAdminFlag(c, &target)
	c.Flags().Lookup("admin-token-file").Usage = "the node's admin token file (needed when the node has one)"
	c.Flags().StringVar(&kind, "kind", "", "the Spot's kind (persistent, e.g. counter)")
	c.Flags().StringVar(&id, "id", "", "the Spot's ID (active on the node)")
	c.Flags().StringVar(&to, "to", "", "RID of the Object Server that takes the Spot (ready, not draining, same mesh)")
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "bounds the move")
	return c
}
