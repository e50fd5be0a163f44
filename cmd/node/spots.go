package main

import (
	"bytes"
	"encoding/json"
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

// spotsResponse answers GET /spots: one entry per mesh, in configuration
// order.
type spotsResponse struct {
	Meshes []spotsMesh `json:"meshes"`
}

// spotsMesh is the Spot runtime of one MeshNode. Enabled is false (and
// Stats absent) on a node with object role none.
type spotsMesh struct {
	Mesh    string      `json:"mesh"`
	RID     string      `json:"rid"`
	Enabled bool        `json:"enabled"`
	Stats   *spot.Stats `json:"stats,omitempty"`
	List    *spotsList  `json:"list,omitempty"`
}

// spotsList is the answer to ?kind=K&list=N: up to N IDs of the kind's
// Spots active on the node (sorted; which N of more is unspecified), or why they cannot be listed.
type spotsList struct {
	Kind  string   `json:"kind"`
	Limit int      `json:"limit"`
	IDs   []string `json:"ids"`
	Error string   `json:"error,omitempty"`
}

// getSpots serves GET /spots[?mesh=NAME][&kind=K[&list=N]].
func (a *app) getSpots(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, errNotStarted)
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
		n, ok := a.meshOr(w, r, name)
		if !ok {
			return
		}
		nodes = []*routemesh.Node{n}
	}
	resp := spotsResponse{Meshes: []spotsMesh{}}
	for _, n := range nodes {
		resp.Meshes = append(resp.Meshes, spotsOf(n, kind, limit))
	}
	writeJSON(w, http.StatusOK, resp)
}

func spotsOf(n *routemesh.Node, kind string, limit int) spotsMesh {
	m := spotsMesh{Mesh: n.Mesh(), RID: n.RID()}
	st, err := spot.StatsOf(n)
	if err != nil {
		return m // no Spot runtime on this mesh
	}
	m.Enabled, m.Stats = true, &st
	if kind != "" {
		l := &spotsList{Kind: kind, Limit: limit, IDs: []string{}}
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

// drainSpotsResponse answers POST /drain: drainResponse plus the Spots
// the drain handed to other Object Servers (the Spot runtime moves every
// persistent Spot away during Drain), summed over the meshes.
type drainSpotsResponse struct {
	drainResponse
	MovedSpots uint64 `json:"moved_spots"`
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

// postDrainSpots serves POST /drain: postDrain, with moved_spots added to
// its answer (spot.StatsOf before and after; a move the node made for
// another reason meanwhile counts too).
func (a *app) postDrainSpots(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	if h == nil {
		a.postDrain(w, r)
		return
	}
	before := spotMoves(h.Meshes())
	rec := &capturedResponse{header: http.Header{}}
	a.postDrain(rec, r)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	var resp drainSpotsResponse
	if (rec.code != http.StatusOK && rec.code != http.StatusGatewayTimeout) || json.Unmarshal(rec.body.Bytes(), &resp.drainResponse) != nil {
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body.Bytes())
		return
	}
	resp.MovedSpots = spotMoves(h.Meshes()) - before
	writeJSON(w, rec.code, resp)
}

// capturedResponse keeps an answer to rewrite it.
type capturedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *capturedResponse) Header() http.Header { return c.header }

func (c *capturedResponse) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

func (c *capturedResponse) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(p)
}
