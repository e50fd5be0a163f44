package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/spot"
)

// spotMoveResponse answers POST /spots/move: the Spot (kind, id) now runs
// on the Object Server to, not on the node (from).
type spotMoveResponse struct {
	Mesh string `json:"mesh"`
	Kind string `json:"kind"`
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
}

// postSpotMove serves POST
// /spots/move?kind=K&id=ID&to=RID[&mesh=NAME][&timeout=D]: spot.Move of
// one Spot active on the node.
func (a *app) postSpotMove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, id, to := q.Get("kind"), q.Get("id"), q.Get("to")
	if kind == "" || id == "" || to == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "spots/move: ?kind=K&id=ID&to=RID are required")
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "spots/move")
	if !ok {
		return
	}
	defer cancel()
	if err := spot.Move(ctx, n, kind, id, to); err != nil {
		a.log.Warn().Err(err).Str("mesh", n.Mesh()).Str("kind", kind).Str("id", id).Str("to", to).Msg("admin: spot move refused or failed")
		spotAdminErr(w, n, err)
		return
	}
	a.log.Info().Str("mesh", n.Mesh()).Str("kind", kind).Str("id", id).Str("to", to).Msg("admin: spot moved")
	writeJSON(w, http.StatusOK, spotMoveResponse{Mesh: n.Mesh(), Kind: kind, ID: id, From: n.RID(), To: to})
}

func newSpotMoveCmd() *cobra.Command {
	var admin adminTarget
	var kind, id, to, mesh string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "spot-move --admin ADDR --kind K --id ID --to RID [--mesh NAME] [--timeout D]",
		Short: "Move one Spot of a persistent kind from a node to another Object Server",
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case kind == "" || id == "" || to == "":
				return usagef("spot-move needs --kind K, --id ID and --to RID")
			case timeout <= 0 || timeout > maxDrainTimeout:
				return usagef(fmt.Sprintf("--timeout %s: want a positive duration up to %s", timeout, maxDrainTimeout))
			}
			ac, err := newAdminClient(admin, timeout+5*time.Second)
			if err != nil {
				return err
			}
			raw, err := spotAdminCall(cmd, ac, "/spots/move?"+spotAdminQuery("kind", kind, "id", id, "to", to, "mesh", mesh, "timeout", timeout.String()))
			if err != nil {
				return err
			}
			var resp spotMoveResponse
			if err := json.Unmarshal(raw, &resp); err != nil {
				return printSpotAdminError(cmd.OutOrStdout(), "protocol", "spot-move: "+err.Error())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moved kind=%s id=%s from=%s to=%s mesh=%s\n", resp.Kind, resp.ID, resp.From, resp.To, resp.Mesh)
			return nil
		},
	}
	addAdminFlag(c, &admin)
	c.Flags().Lookup("admin-token-file").Usage = "the node's admin token file (needed when the node has one)"
	c.Flags().StringVar(&kind, "kind", "", "the Spot's kind (persistent, e.g. counter)")
	c.Flags().StringVar(&id, "id", "", "the Spot's ID (active on the node)")
	c.Flags().StringVar(&to, "to", "", "RID of the Object Server that takes the Spot (ready, not draining, same mesh)")
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "bounds the move")
	return c
}
