package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// undrainResponse answers POST /undrain.
type undrainResponse struct {
	Undrained bool     `json:"undrained"`
	Meshes    []string `json:"meshes"`
	Error     string   `json:"error,omitempty"`
}

// postUndrain serves POST /undrain: every mesh of the node returns to new
// selection (undoes a drain) without a restart. 409 while the process is
// shutting down (its drain is part of the shutdown).
func (a *app) postUndrain(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	switch {
	case h == nil:
		writeErr(w, http.StatusServiceUnavailable, errNotStarted)
		return
	case a.stopping.Load():
		writeErr(w, http.StatusConflict, fmt.Errorf("undrain: the process is shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	resp := undrainResponse{Undrained: true, Meshes: []string{}}
	for _, n := range h.Meshes() {
		resp.Meshes = append(resp.Meshes, n.Mesh())
		if err := n.Undrain(ctx); err != nil {
			resp.Undrained = false
			resp.Error = fmt.Sprintf("mesh %s: %v", n.Mesh(), err)
			writeJSON(w, http.StatusConflict, resp)
			return
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func newUndrainCmd() *cobra.Command {
	var admin adminTarget
	c := &cobra.Command{
		Use:   "undrain --admin ADDR",
		Short: "Undo a drain: the node returns to new selection without a restart",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac, err := newAdminClient(admin, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			code, raw, err := ac.do(cmd.Context(), http.MethodPost, "/undrain", nil)
			if err != nil {
				return err
			}
			var resp undrainResponse
			if code == http.StatusOK {
				if err := json.Unmarshal(raw, &resp); err != nil {
					return fmt.Errorf("undrain: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "undrained mesh=%s\n", strings.Join(resp.Meshes, ","))
				return nil
			}
			if json.Unmarshal(raw, &resp) == nil && resp.Error != "" {
				return fmt.Errorf("undrain: %s", resp.Error)
			}
			return fail(code, raw)
		},
	}
	addAdminFlag(c, &admin)
	return c
}
