package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// maxSpotList caps the Spot IDs one GET /spots lists per mesh.
const maxSpotList = 10000

// defaultSpotList is how many IDs ?kind=K lists without ?list=N.
const defaultSpotList = 100

// SpotsResponse answers GET /spots: one entry per mesh, in configuration
// order.
type SpotsResponse struct {
	Meshes []SpotsMesh `json:"meshes"`
}

// SpotsMesh is the Spot runtime of one MeshNode. Enabled is false (and
// Stats absent) on a node with object role none.
type SpotsMesh struct {
	Mesh    string      `json:"mesh"`
	RID     string      `json:"rid"`
	Enabled bool        `json:"enabled"`
	Stats   *spot.Stats `json:"stats,omitempty"`
	List    *SpotsList  `json:"list,omitempty"`
}

// SpotsList is the answer to ?kind=K&list=N: up to N IDs of the kind's
// Spots active on the node (sorted; which N of more is unspecified), or why they cannot be listed.
type SpotsList struct {
	Kind  string   `json:"kind"`
	Limit int      `json:"limit"`
	IDs   []string `json:"ids"`
	Error string   `json:"error,omitempty"`
}

// getSpots serves GET /spots[?mesh=NAME][&kind=K[&list=N]].
func (a *API) getSpots(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	}
	q := r.URL.Query()
	kind, listArg := q.Get("kind"), q.Get("list")
	limit := 0
	switch {
	case listArg != "" && kind == "":
		writeErr(w, http.StatusBadRequest, errors.New("spots: ?list=N needs ?kind=K"))
		return
	case listArg != "":
		n, err := strconv.Atoi(listArg)
		if err != nil || n < 1 || n > maxSpotList {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("spots: list %q: want an integer 1..%d", listArg, maxSpotList))
			return
		}
		limit = n
	case kind != "":
		limit = defaultSpotList
	}
	nodes := h.Meshes()
	if name := q.Get("mesh"); name != "" {
		n, ok := a.meshOr(w, name)
		if !ok {
			return
		}
		nodes = []*routemesh.Node{n}
	}
	resp := SpotsResponse{Meshes: []SpotsMesh{}}
	for _, n := range nodes {
		resp.Meshes = append(resp.Meshes, spotsOf(n, kind, limit))
	}
	writeJSON(w, http.StatusOK, resp)
}

func spotsOf(n *routemesh.Node, kind string, limit int) SpotsMesh {
	m := SpotsMesh{Mesh: n.Mesh(), RID: n.RID()}
	st, err := spot.StatsOf(n)
	if err != nil {
		return m // no Spot runtime on this mesh
	}
	m.Enabled, m.Stats = true, &st
	if kind != "" {
		l := &SpotsList{Kind: kind, Limit: limit, IDs: []string{}}
		if ids, err := spot.Active(n, kind, limit); err != nil {
			l.Error = err.Error()
		} else if ids != nil {
			slices.Sort(ids)
			l.IDs = ids
		}
		m.List = l
	}
	return m
}

// spotMoves sums spot.Stats.Moves over the nodes that run the Spot
// runtime.
func spotMoves(nodes []*routemesh.Node) uint64 {
	var total uint64
	for _, n := range nodes {
		if st, err := spot.StatsOf(n); err == nil {
			total += st.Moves
		}
	}
	return total
}

// OwnerResponse answers GET /spots/owner: spot.OwnerInfo as read by the
// node asked.
type OwnerResponse = spot.OwnerInfo

// getSpotOwner serves GET /spots/owner?kind=K&id=ID[&mesh=NAME][&timeout=D]:
// spot.Owner, one read of the Spot's ownership record (and of its owner's
// lease); it claims and activates nothing. 404 not_found when nobody owns
// the Spot.
func (a *API) getSpotOwner(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, id := q.Get("kind"), q.Get("id")
	if kind == "" || id == "" {
		spotAdminFail(w, http.StatusBadRequest, "bad_request", "spots/owner: ?kind=K&id=ID are required")
		return
	}
	n, ctx, cancel, ok := a.spotAdminNode(w, r, "spots/owner", adminTimeout)
	if !ok {
		return
	}
	defer cancel()
	info, err := spot.Owner(ctx, n, kind, id)
	if err != nil {
		spotAdminErr(w, n, err)
		return
	}
	writeJSON(w, http.StatusOK, OwnerResponse(info))
}
