package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// Host Relocate and Spot moves on the admin API (POST /relocate, POST
// /spots/move) and their commands (relocate, spot-move).

// defaultSpotAdminTimeout bounds a relocate or move without ?timeout=D.
const defaultSpotAdminTimeout = 60 * time.Second

// blockedManual is the reason a manual topology gives for refusing Host
// Relocate.
const blockedManual = "Blocked/ManualTopologyUnsupported"

// spotAdminRoutes registers the mutating Spot endpoints (they need the
// admin token when one is configured).
func (a *app) spotAdminRoutes(rt *routeTable) {
	rt.handleFunc("POST", "/relocate", a.requireToken(longWrite(a.postRelocate)))
	rt.handleFunc("POST", "/spots/move", a.requireToken(longWrite(a.postSpotMove)))
}

// relocateResponse answers POST /relocate: what spot.Relocate moved from
// the node (rid) to the Object Server to.
type relocateResponse struct {
	Mesh   string `json:"mesh"`
	RID    string `json:"rid"`
	To     string `json:"to"`
	Moved  int    `json:"moved"`
	Failed int    `json:"failed"`
	Other  int    `json:"other"`
}

// spotAdminError is the error body of POST /relocate and POST
// /spots/move: the message and its stable lower_snake code.
type spotAdminError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// spotAdminFail answers a refused or failed relocate or move.
func spotAdminFail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, spotAdminError{Error: msg, Code: code})
}

// spotAdminErr answers err of spot.Relocate or spot.Move with its code and
// HTTP status.
func spotAdminErr(w http.ResponseWriter, n *routemesh.Node, err error) {
	code := spotAdminCode(err)
	msg := cliText(err.Error())
	status := http.StatusInternalServerError
	switch code {
	case "blocked":
		status = http.StatusConflict
		msg = fmt.Sprintf("%s: %s has a manual topology (fixed --rid or --peer); Host Relocate needs an automatic topology (--rid-prefix with --location redis://…); nothing was changed", blockedManual, n.RID())
	case "not_enabled", "role", "no_target", "fenced":
		status = http.StatusConflict
	case "unknown_kind":
		status = http.StatusNotFound
	case "config":
		status = http.StatusBadRequest
	case "busy", "mailbox_full", "shutting_down":
		status = http.StatusServiceUnavailable
	case "timeout", "cancelled":
		status = http.StatusGatewayTimeout
	}
	spotAdminFail(w, status, code, msg)
}

// spotAdminCode is the stable lower_snake name of an error of a relocate
// or a move.
func spotAdminCode(err error) string {
	switch {
	case errors.Is(err, spot.ErrManualTopology):
		return "blocked"
	case errors.Is(err, spot.ErrNotEnabled):
		return "not_enabled"
	case errors.Is(err, spot.ErrUnknownKind):
		return "unknown_kind"
	case errors.Is(err, spot.ErrConfig):
		return "config"
	case errors.Is(err, spot.ErrHandler):
		return wire.CodeHandler.String()
	}
	if c := spotCode(err); c != wire.CodeHandler.String() {
		return c
	}
	return "failed" // not a wire code: wire.CodeOf says handler for anything
}

// spotAdminTimeout reads ?timeout=D (default defaultSpotAdminTimeout, at
// most maxDrainTimeout).
func spotAdminTimeout(q url.Values) (time.Duration, error) {
	s := q.Get("timeout")
	if s == "" {
		return defaultSpotAdminTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxDrainTimeout {
		return 0, fmt.Errorf("timeout %q: want a positive duration up to %s", s, maxDrainTimeout)
	}
	return d, nil
}

// spotAdminNode resolves ?mesh=NAME and ?timeout=D of a relocate or move;
// it answers the request itself when it returns false.
func (a *app) spotAdminNode(w http.ResponseWriter, r *http.Request, what string) (*routemesh.Node, context.Context, context.CancelFunc, bool) {
	q := r.URL.Query()
	d, err := spotAdminTimeout(q)
	if err != nil {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", what+": "+err.Error())
		return nil, nil, nil, false
	}
	n, err := a.mesh(q.Get("mesh"))
	switch {
	case errors.Is(err, errNotStarted):
		spotAdminFail(w, http.StatusServiceUnavailable, "not_started", err.Error())
		return nil, nil, nil, false
	case err != nil:
		spotAdminFail(w, http.StatusNotFound, "unknown_mesh", err.Error())
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return n, ctx, cancel, true
}

// postRelocate serves POST /relocate?to=RID[&mesh=NAME][&timeout=D]: Host
// Relocate (spot.Relocate) of the node's mesh to the Object Server RID.
func (a *app) postRelocate(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if to == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "relocate: ?to=RID is required (the Object Server that takes the Spots)")
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "relocate")
	if !ok {
		return
	}
	defer cancel()
	res, err := spot.Relocate(ctx, n, to)
	if err != nil {
		a.log.Warn().Err(err).Str("mesh", n.Mesh()).Str("to", to).Msg("admin: relocate refused or failed")
		spotAdminErr(w, n, err)
		return
	}
	a.log.Info().Str("mesh", n.Mesh()).Str("to", to).Int("moved", res.Moved).Int("failed", res.Failed).Int("other", res.Other).Msg("admin: relocated")
	writeJSON(w, http.StatusOK, relocateResponse{Mesh: n.Mesh(), RID: n.RID(), To: to, Moved: res.Moved, Failed: res.Failed, Other: res.Other})
}

// spotAdminCall sends a relocate or move request and returns the body of
// a 200 answer; any other outcome is printed as `error <code> <message>`
// (errSilent: exit 1).
func spotAdminCall(cmd *cobra.Command, ac *adminClient, path string) ([]byte, error) {
	out := cmd.OutOrStdout()
	code, raw, err := ac.do(cmd.Context(), http.MethodPost, path, nil)
	if err != nil {
		return nil, printSpotAdminError(out, "unreachable", err.Error())
	}
	if code == http.StatusOK {
		return raw, nil
	}
	var e spotAdminError
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
	var admin adminTarget
	var to, mesh string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "relocate --admin ADDR --to RID [--mesh NAME] [--timeout D]",
		Short: "Host Relocate: move every persistent Spot of a node to another Object Server",
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case to == "":
				return usagef("relocate needs --to RID (the Object Server that takes the Spots)")
			case timeout <= 0 || timeout > maxDrainTimeout:
				return usagef(fmt.Sprintf("--timeout %s: want a positive duration up to %s", timeout, maxDrainTimeout))
			}
			ac, err := newAdminClient(admin, timeout+5*time.Second)
			if err != nil {
				return err
			}
			raw, err := spotAdminCall(cmd, ac, "/relocate?"+spotAdminQuery("to", to, "mesh", mesh, "timeout", timeout.String()))
			if err != nil {
				return err
			}
			var resp relocateResponse
			if err := json.Unmarshal(raw, &resp); err != nil {
				return printSpotAdminError(cmd.OutOrStdout(), "protocol", "relocate: "+err.Error())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "relocated moved=%d failed=%d other=%d mesh=%s from=%s to=%s\n",
				resp.Moved, resp.Failed, resp.Other, resp.Mesh, resp.RID, resp.To)
			return nil
		},
	}
	addAdminFlag(c, &admin)
	c.Flags().Lookup("admin-token-file").Usage = "the node's admin token file (needed when the node has one)"
	c.Flags().StringVar(&to, "to", "", "RID of the Object Server that takes the Spots (ready, not draining, same mesh)")
	c.Flags().StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	c.Flags().DurationVar(&timeout, "timeout", defaultSpotAdminTimeout, "bounds the relocation")
	return c
}
