package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
)

// newSpotOwnerCmd is `spot-owner`: who owns a Spot, read through a node's
// admin API (GET /spots/owner, spot.Owner); it claims and activates
// nothing.
func newSpotOwnerCmd() *cobra.Command {
	var target adminTarget
	var kind, id, mesh string
	var asJSON bool
	c := &cobra.Command{
		Use:   "spot-owner --admin ADDR --kind K --id ID [--mesh NAME] [--json]",
		Short: "Show who owns a Spot (owner RID, generation, epoch, active or not); claims and activates nothing",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind == "" || id == "" {
				return usagef("spot-owner needs --kind K and --id ID")
			}
			ac, err := newAdminClient(target, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			raw, err := spotAdminDo(cmd, ac, http.MethodGet, "/spots/owner?"+spotAdminQuery("kind", kind, "id", id, "mesh", mesh))
			if err != nil {
				return err
			}
			if asJSON {
				_, err = cmd.OutOrStdout().Write(raw)
				return err
			}
			var o admin.OwnerResponse
			if err := json.Unmarshal(raw, &o); err != nil {
				return printSpotAdminError(cmd.OutOrStdout(), "protocol", "spot-owner: "+err.Error())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "owner kind=%s id=%s rid=%s generation=%d epoch=%d lease_live=%t active=%s local=%t mesh=%s\n",
				o.Kind, o.ID, o.RID, o.Generation, o.Epoch, o.LeaseLive, o.Active, o.Local, o.Mesh)
			return nil
		},
	}
	addAdminFlag(c, &target)
	c.Flags().StringVar(&kind, "kind", "", "the Spot's kind (e.g. counter)")
	c.Flags().StringVar(&id, "id", "", "the Spot's ID")
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the JSON of GET /spots/owner")
	return c
}
