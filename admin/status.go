package admin

// GET /status and GET /tree: the node's status (with the embedder's
// counters) and the supervision tree.

import (
	"context"
	"net/http"

	"github.com/zlink-go/zlink/routemesh"
)

// status returns the Status of n with the embedder's counters added.
func (a *API) status(ctx context.Context, n *routemesh.Node) (routemesh.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		return st, err
	}
	if st.Counters == nil {
		st.Counters = map[string]uint64{}
	}
	if a.opts.Counters != nil {
		for k, v := range a.opts.Counters(n.Mesh()) {
			st.Counters[k] = v
		}
	}
	return st, nil
}

// getStatus serves GET /status[?mesh=NAME] (default: the first mesh), with
// the Location Store's counters.
func (a *API) getStatus(w http.ResponseWriter, r *http.Request) {
	n, ok := a.meshOr(w, r.URL.Query().Get("mesh"))
	if !ok {
		return
	}
	st, err := a.status(r.Context(), n)
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, StatusResponse{Status: st, Store: storeStats(n.Store())})
}

// getTree serves GET /tree: the whole supervision tree of the process.
func (a *API) getTree(w http.ResponseWriter, _ *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	}
	writeJSON(w, http.StatusOK, h.Tree())
}
