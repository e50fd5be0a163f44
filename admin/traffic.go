package admin

// POST /weight, /drain and /undrain: the traffic a node takes.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	zlink "github.com/zlink-go/zlink"
)

// WeightRequest is the body of POST /weight.
type WeightRequest struct {
	Mesh    string `json:"mesh,omitempty"`
	Channel string `json:"channel"`
	Weight  *int   `json:"weight"`
}

// WeightResponse answers POST /weight.
type WeightResponse struct {
	Mesh    string `json:"mesh"`
	Channel string `json:"channel"`
	Weight  int    `json:"weight"`
}

// DrainRequest is the optional body of POST /drain.
type DrainRequest struct {
	Timeout string `json:"timeout,omitempty"`
}

// DrainResponse answers POST /drain: drained or not, the meshes, and the
// Spots the drain handed to other Object Servers (the Spot runtime moves
// every persistent Spot away during Drain), summed over the meshes.
type DrainResponse struct {
	Drained    bool     `json:"drained"`
	Meshes     []string `json:"meshes"`
	Error      string   `json:"error,omitempty"`
	MovedSpots uint64   `json:"moved_spots"`
}

// UndrainResponse answers POST /undrain.
type UndrainResponse struct {
	Undrained bool     `json:"undrained"`
	Meshes    []string `json:"meshes"`
	Error     string   `json:"error,omitempty"`
}

// postWeight serves POST /weight {"channel":..,"weight":..[,"mesh":..]}.
func (a *API) postWeight(w http.ResponseWriter, r *http.Request) {
	var req WeightRequest
	if !readJSON(w, r, "weight", &req, false) {
		return
	}
	if req.Channel == "" || req.Weight == nil {
		writeErr(w, http.StatusBadRequest, errors.New(`weight: body needs "channel" and "weight"`))
		return
	}
	n, ok := a.meshOr(w, req.Mesh)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	if err := n.SetWeight(ctx, req.Channel, *req.Weight); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, zlink.ErrConfig) {
			code = http.StatusBadRequest
		}
		writeErr(w, code, err)
		return
	}
	a.log.Info().Str("mesh", n.Mesh()).Str("channel", req.Channel).Int("weight", *req.Weight).Msg("admin: weight set")
	writeJSON(w, http.StatusOK, WeightResponse{Mesh: n.Mesh(), Channel: req.Channel, Weight: *req.Weight})
}

// postDrain serves POST /drain[?timeout=D]: drains every mesh and answers
// when drained (200) or when the timeout passes (504), with the Spots the
// drain moved (spot.Stats.Moves before and after; a move the node made
// for another reason meanwhile counts too).
func (a *API) postDrain(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	}
	timeout := r.URL.Query().Get("timeout")
	if timeout == "" && r.ContentLength != 0 {
		var req DrainRequest
		if !readJSON(w, r, "drain", &req, true) {
			return
		}
		timeout = req.Timeout
	}
	ctx := r.Context()
	if timeout == "" {
		// No timeout asked: the node's own drain timeout bounds the wait;
		// this bounds everything else (e.g. reaching a busy mesh actor).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, MaxDrainTimeout)
		defer cancel()
	}
	if timeout != "" {
		d, err := time.ParseDuration(timeout)
		if err != nil || d <= 0 || d > MaxDrainTimeout {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("drain: timeout %q: want a positive duration up to %s", timeout, MaxDrainTimeout))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	before := spotMoves(h.Meshes())
	resp := DrainResponse{Drained: true, Meshes: []string{}}
	code := http.StatusOK
	for _, n := range h.Meshes() {
		resp.Meshes = append(resp.Meshes, n.Mesh())
		if err := n.Drain(ctx); err != nil {
			resp.Drained = false
			resp.Error = fmt.Sprintf("mesh %s: %v", n.Mesh(), err)
			code = http.StatusGatewayTimeout
			break
		}
	}
	resp.MovedSpots = spotMoves(h.Meshes()) - before
	ev := a.log.Info()
	if !resp.Drained {
		ev = a.log.Warn().Str("error", resp.Error)
	}
	ev.Bool("drained", resp.Drained).Uint64("moved_spots", resp.MovedSpots).Msg("admin: drain")
	writeJSON(w, code, resp)
}

// postUndrain serves POST /undrain: every mesh of the node returns to new
// selection (undoes a drain) without a restart. 409 while the process is
// shutting down (its drain is part of the shutdown).
func (a *API) postUndrain(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	switch {
	case h == nil:
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	case a.stopping():
		writeErr(w, http.StatusConflict, fmt.Errorf("undrain: the process is shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	resp := UndrainResponse{Undrained: true, Meshes: []string{}}
	for _, n := range h.Meshes() {
		resp.Meshes = append(resp.Meshes, n.Mesh())
		if err := n.Undrain(ctx); err != nil {
			resp.Undrained = false
			resp.Error = fmt.Sprintf("mesh %s: %v", n.Mesh(), err)
			writeJSON(w, http.StatusConflict, resp)
			return
		}
	}
	a.log.Info().Strs("meshes", resp.Meshes).Msg("admin: undrained")
	writeJSON(w, http.StatusOK, resp)
}
