package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// Host Relocate and Spot moves on the admin API (POST /relocate, POST
// /spots/move).

// defaultSpotAdminTimeout bounds a relocate or move without ?timeout=D.
const defaultSpotAdminTimeout = 60 * time.Second

// BlockedManual is the reason a manual topology gives for refusing Host
// Relocate (the message of the blocked code).
const BlockedManual = "Blocked/ManualTopologyUnsupported"

// RelocateResponse answers POST /relocate: what spot.Relocate moved from
// the node (rid) to the Object Server to.
type RelocateResponse struct {
	Mesh   string `json:"mesh"`
	RID    string `json:"rid"`
	To     string `json:"to"`
	Moved  int    `json:"moved"`
	Failed int    `json:"failed"`
	Other  int    `json:"other"`
}

// SpotMoveResponse answers POST /spots/move: the Spot (kind, id) now runs
// on the Object Server to, not on the node (from).
type SpotMoveResponse struct {
	Mesh string `json:"mesh"`
	Kind string `json:"kind"`
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
}

// spotAdminFail answers a refused or failed Spot endpoint request.
func spotAdminFail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorResponse{Error: msg, Code: code})
}

// spotAdminErr answers err of spot.Relocate or spot.Move with its code and
// HTTP status.
func spotAdminErr(w http.ResponseWriter, n *routemesh.Node, err error) {
	code := ErrorCode(err)
	msg := err.Error()
	status := http.StatusInternalServerError
	switch code {
	case "blocked":
		status = http.StatusConflict
		msg = fmt.Sprintf("%s: %s has a manual topology (fixed --rid or --peer); Host Relocate needs an automatic topology (--rid-prefix with --location redis://…); nothing was changed", BlockedManual, n.RID())
	case "not_enabled", "role", "no_target", "fenced":
		status = http.StatusConflict
	case "unknown_kind", "not_found":
		status = http.StatusNotFound
	case "config", "invalid":
		status = http.StatusBadRequest
	case "busy", "mailbox_full", "shutting_down":
		status = http.StatusServiceUnavailable
	case "timeout", "cancelled":
		status = http.StatusGatewayTimeout
	}
	spotAdminFail(w, status, code, msg)
}

// ErrorCode is the stable lower_snake name the admin API gives an error of
// a Spot endpoint (relocate, move, owner look-up): blocked, not_enabled,
// unknown_kind, config, not_found (nobody owns the Spot), invalid (a name
// a Spot cannot have), corrupt (a record the runtime did not write),
// handler, failed (anything else that is not a wire error), else
// SpotCode's.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, spot.ErrNotFound):
		return "not_found"
	case errors.Is(err, location.ErrInvalid):
		return "invalid"
	case errors.Is(err, location.ErrCorrupt):
		return "corrupt"
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
	if c := SpotCode(err); c != wire.CodeHandler.String() {
		return c
	}
	return "failed" // not a wire code: wire.CodeOf says handler for anything
}

// SpotCode is the stable lower_snake name of a Spot call's error: the
// Spot runtime's own errors (cycle, fenced, role), else the wire code name
// (handler for an error the wire does not know).
func SpotCode(err error) string {
	switch {
	case errors.Is(err, spot.ErrCycle):
		return "cycle"
	case errors.Is(err, spot.ErrFenced):
		return "fenced"
	case errors.Is(err, spot.ErrRole):
		return "role"
	}
	return wire.CodeOf(err).String()
}

// spotAdminTimeout reads ?timeout=D (default def, at most
// MaxDrainTimeout).
func spotAdminTimeout(q url.Values, def time.Duration) (time.Duration, error) {
	s := q.Get("timeout")
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > MaxDrainTimeout {
		return 0, fmt.Errorf("timeout %q: want a positive duration up to %s", s, MaxDrainTimeout)
	}
	return d, nil
}

// spotAdminNode resolves ?mesh=NAME and ?timeout=D (default def) of a
// Spot endpoint; it answers the request itself when it returns false.
func (a *API) spotAdminNode(w http.ResponseWriter, r *http.Request, what string, def time.Duration) (*routemesh.Node, context.Context, context.CancelFunc, bool) {
	q := r.URL.Query()
	d, err := spotAdminTimeout(q, def)
	if err != nil {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", what+": "+err.Error())
		return nil, nil, nil, false
	}
	n, err := a.mesh(q.Get("mesh"))
	switch {
	case errors.Is(err, ErrNotStarted):
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
func (a *API) postRelocate(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if to == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "relocate: ?to=RID is required (the Object Server that takes the Spots)")
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "relocate", defaultSpotAdminTimeout)
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
	writeJSON(w, http.StatusOK, RelocateResponse{Mesh: n.Mesh(), RID: n.RID(), To: to, Moved: res.Moved, Failed: res.Failed, Other: res.Other})
}

// postSpotMove serves POST
// /spots/move?kind=K&id=ID&to=RID[&mesh=NAME][&timeout=D]: spot.Move of
// one Spot active on the node.
func (a *API) postSpotMove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, id, to := q.Get("kind"), q.Get("id"), q.Get("to")
	if kind == "" || id == "" || to == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "spots/move: ?kind=K&id=ID&to=RID are required")
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "spots/move", defaultSpotAdminTimeout)
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
	writeJSON(w, http.StatusOK, SpotMoveResponse{Mesh: n.Mesh(), Kind: kind, ID: id, From: n.RID(), To: to})
}
