package admin

// The admin API's JSON bodies, its error body and the mesh a request names.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// ErrorResponse is every admin error body. Config is true when the
// request was refused as a configuration error (e.g. weight out of range).
type ErrorResponse struct {
	Error string `json:"error"`
	// Code, when set, names the refusal in lower_snake (unauthorized,
	// forbidden_host, forbidden_origin, content_type, read_only,
	// body_too_large, bad_body, body_timeout, method_not_allowed, and
	// those of the Spot endpoints).
	Code   string `json:"code,omitempty"`
	Config bool   `json:"config,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, ErrorResponse{Error: err.Error(), Config: errors.Is(err, zlink.ErrConfig)})
}

// mesh returns the MeshNode named name ("" = the first).
func (a *API) mesh(name string) (*routemesh.Node, error) {
	h := a.host.Load()
	if h == nil {
		return nil, ErrNotStarted
	}
	if name == "" {
		return h.Meshes()[0], nil
	}
	if n := h.Mesh(name); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownMesh, name)
}

func (a *API) meshOr(w http.ResponseWriter, name string) (*routemesh.Node, bool) {
	n, err := a.mesh(name)
	switch {
	case errors.Is(err, ErrNotStarted):
		writeErr(w, http.StatusServiceUnavailable, err)
		return nil, false
	case err != nil:
		writeErr(w, http.StatusNotFound, err)
		return nil, false
	}
	return n, true
}
