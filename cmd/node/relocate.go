package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
)

// The commands of Host Relocate and Spot moves (relocate, spot-move) on
// the admin API (POST /relocate, POST /spots/move).

// defaultSpotAdminTimeout bounds a relocate or move without --timeout.
const defaultSpotAdminTimeout = 60 * time.Second

// spotAdminCall sends a relocate or move request and returns the body of
// a 200 answer; any other outcome is printed as `error <code> <message>`
// (errSilent: exit 1).
func spotAdminCall(cmd *cobra.Command, ac *adminClient, path string) ([]byte, error) {
	return spotAdminDo(cmd, ac, http.MethodPost, path)
}

// spotAdminDo is spotAdminCall with any method.
func spotAdminDo(cmd *cobra.Command, ac *adminClient, method, path string) ([]byte, error) {
	return spotAdminDoBody(cmd, ac, method, path, nil)
}

// spotAdminDoBody is spotAdminDo with a JSON body (nil: none).
func spotAdminDoBody(cmd *cobra.Command, ac *adminClient, method, path string, body any) ([]byte, error) {
	out := cmd.OutOrStdout()
	code, raw, err := ac.do(cmd.Context(), method, path, body)
	if err != nil {
		return nil, printSpotAdminError(out, "unreachable", err.Error())
	}
	if code == http.StatusOK {
		return raw, nil
	}
	var e admin.ErrorResponse
	if json.Unmarshal(raw, &e) != nil || e.Error == "" {
		e.Error = fmt.Sprintf("admin answered %d: %s", code, strings.TrimSpace(string(raw)))
	}
	if e.Code == "" {
		e.Code = statusCode(code)
	}
	return nil, printSpotAdminError(out, e.Code, e.Error)
}

// statusCode names an admin answer without a code of its own (an older
// node, or the token check).
func statusCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusServiceUnavailable:
		return "unavailable"
	case http.StatusMethodNotAllowed:
		return "unsupported"
	}
	return "failed"
}

func printSpotAdminError(w io.Writer, code, msg string) error {
	fmt.Fprintf(w, "error %s %s\n", code, oneLine(msg))
	return errSilent
}

// spotAdminQuery is the query of a relocate or move: the values set, in a
// stable order.
func spotAdminQuery(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q.Encode()
}

func newRelocateCmd() *cobra.Command {
	var target adminTarget
	var to, mesh string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "relocate --admin ADDR --to RID [--mesh NAME] [--timeout D]",
		Short: "Host Relocate: move every persistent Spot of a node to another Object Server",
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case to == "":
				return usagef("relocate needs --to RID (the Object Server that takes the Spots)")
			case timeout <= 0 || timeout > admin.MaxDrainTimeout:
				return usagef(fmt.Sprintf("--timeout %s: want a positive duration up to %s", timeout, admin.MaxDrainTimeout))
			}
			ac, err := newAdminClient(target, timeout+5*time.Second)
			if err != nil {
				return err
			}
			raw, err := spotAdminCall(cmd, ac, "/relocate?"+spotAdminQuery("to", to, "mesh", mesh, "timeout", timeout.String()))
			if err != nil {
				return err
			}
			var resp admin.RelocateResponse
			if err := json.Unmarshal(raw, &resp); err != nil {
				return printSpotAdminError(cmd.OutOrStdout(), "protocol", "relocate: "+err.Error())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "relocated moved=%d failed=%d other=%d mesh=%s from=%s to=%s\n",
				resp.Moved, resp.Failed, resp.Other, resp.Mesh, resp.RID, resp.To)
			return nil
		},
	}
	addAdminFlag(c, &target)
	c.Flags().Lookup("admin-token-file").Usage = "the node's admin token file (needed when the node has one)"
	c.Flags().StringVar(&to, "to", "", "RID of the Object Server that takes the Spots (ready, not draining, same mesh)")
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	c.Flags().DurationVar(&timeout, "timeout", defaultSpotAdminTimeout, "bounds the relocation")
	return c
}
