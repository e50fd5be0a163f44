package admin

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// The live dashboard at /ui: static assets embedded in the binary (plain
// HTML, CSS and JS; nothing is fetched from elsewhere) and one JSON
// snapshot of the node, built from the same public APIs as /status, /tree
// and /spots, pushed to the page with server-sent events.

//go:embed ui
var uiAssets embed.FS

const (
	// uiPoll is how often a stream builds a snapshot to look for changes.
	uiPoll = 250 * time.Millisecond
	// uiHeartbeat is the longest a stream goes without sending one.
	uiHeartbeat = time.Second
	// uiWriteTimeout bounds writing one event to a stalled reader.
	uiWriteTimeout = 10 * time.Second
	// uiWindow is how many recent recorded selections of a channel the
	// shares are computed over.
	uiWindow = 64
)

// uiSnapshot is one view of the whole process (GET /ui/snapshot, and each
// event of GET /ui/events).
type uiSnapshot struct {
	// State is ok, starting (no host yet) or stopping.
	State  string           `json:"state"`
	Meshes []uiMesh         `json:"meshes"`
	Tree   *supervisor.Node `json:"tree,omitempty"`
}

// uiMesh is one MeshNode: its Status (as GET /status), its Spot runtime
// (as one entry of GET /spots) and, per channel, the Servers this node
// selected among recently.
type uiMesh struct {
	Mesh     string            `json:"mesh"`
	Status   *routemesh.Status `json:"status,omitempty"`
	Error    string            `json:"error,omitempty"`
	Channels []uiChannel       `json:"channels"`
	Spots    SpotsMesh         `json:"spots"`
}

// uiChannel is one channel role of the node. Servers are the candidates of
// the latest recorded selection (a Client or caller's view; the runtime
// records one successful selection in 16, and every failed one), each with
// the share of the last Samples recorded selections that picked it.
type uiChannel struct {
	Name    string     `json:"name"`
	Role    string     `json:"role"`
	Weight  int        `json:"weight"`
	Samples int        `json:"samples"`
	Servers []uiServer `json:"servers"`
	// LastOutcome and LastAt describe the latest recorded selection.
	LastOutcome string    `json:"last_outcome,omitempty"`
	LastAt      time.Time `json:"last_at,omitzero"`
}

// uiServer is one Server of a channel as this node last saw it.
type uiServer struct {
	RID    string `json:"rid"`
	Weight uint16 `json:"weight"`
	Local  bool   `json:"local,omitempty"`
	Skip   string `json:"skip,omitempty"`
	// Picks of the channel's Samples recorded selections chose it; Share
	// is Picks/Samples.
	Picks int     `json:"picks"`
	Share float64 `json:"share"`
}

// uiState keeps what the snapshots share: the recent selections of each
// channel, sampled by every snapshot (any stream, any request).
type uiState struct {
	a   *API
	mu  sync.Mutex
	sel map[string]*selWindow // mesh + "\x00" + channel
}

// selWindow is a ring of recent recorded selections of one channel.
type selWindow struct {
	last time.Time // At of the latest one added
	rids []string  // picked RID per selection ("" = no target / busy)
	next int
}

func (w *selWindow) add(s *routemesh.Selection) {
	if s == nil || !s.At.After(w.last) {
		return
	}
	w.last = s.At
	rid := ""
	if s.Outcome == "picked" {
		rid = s.RID
	}
	if len(w.rids) < uiWindow {
		w.rids = append(w.rids, rid)
		return
	}
	w.rids[w.next] = rid
	w.next = (w.next + 1) % uiWindow
}

// uiRoutes registers the dashboard: /ui (the page and its assets),
// /ui/snapshot (one snapshot) and /ui/events (the stream). All read-only.
func (a *API) uiRoutes(mux *http.ServeMux) {
	u := &uiState{a: a, sel: map[string]*selWindow{}}
	static, err := fs.Sub(uiAssets, "ui")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(static))
	mux.HandleFunc("GET /ui", a.read(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, a.opts.Prefix+"/ui/", http.StatusMovedPermanently)
	}))
	mux.HandleFunc("GET /ui/", a.read(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /ui/snapshot", a.read(u.getSnapshot))
	mux.HandleFunc("GET /ui/events", a.read(u.getEvents))
}

// snapshot builds one view of the process from its public APIs.
func (u *uiState) snapshot(ctx context.Context) uiSnapshot {
	h := u.a.host.Load()
	snap := uiSnapshot{State: "ok", Meshes: []uiMesh{}}
	switch {
	case h == nil:
		snap.State = "starting"
		return snap
	case u.a.stopping():
		snap.State = "stopping"
	}
	for _, n := range h.Meshes() {
		m := uiMesh{Mesh: n.Mesh(), Channels: []uiChannel{}, Spots: spotsOf(n, "", 0)}
		st, err := u.a.status(ctx, n)
		if err != nil {
			m.Error = err.Error()
		}
		if st.Mesh != "" {
			m.Status = &st
			m.Channels = u.channels(st)
		}
		snap.Meshes = append(snap.Meshes, m)
	}
	tree := h.Tree()
	snap.Tree = &tree
	return snap
}

// channels records each channel's latest selection and returns the
// channels with their Servers' shares.
func (u *uiState) channels(st routemesh.Status) []uiChannel {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]uiChannel, 0, len(st.Channels))
	for _, c := range st.Channels {
		uc := uiChannel{Name: c.Name, Role: c.Role, Weight: c.Weight, Servers: []uiServer{}}
		key := st.Mesh + "\x00" + c.Name
		w := u.sel[key]
		if w == nil && c.LastSelection != nil {
			w = &selWindow{}
			u.sel[key] = w
		}
		if w != nil {
			w.add(c.LastSelection)
			uc.Samples = len(w.rids)
		}
		if s := c.LastSelection; s != nil {
			uc.LastOutcome, uc.LastAt = s.Outcome, s.At
			picks := map[string]int{}
			for _, rid := range w.rids {
				picks[rid]++
			}
			for _, cand := range s.Candidates {
				sv := uiServer{RID: cand.RID, Weight: cand.Weight, Local: cand.Local, Skip: cand.Skip, Picks: picks[cand.RID]}
				if uc.Samples > 0 {
					sv.Share = float64(sv.Picks) / float64(uc.Samples)
				}
				uc.Servers = append(uc.Servers, sv)
			}
		}
		out = append(out, uc)
	}
	return out
}

// getSnapshot serves GET /ui/snapshot: one snapshot as JSON.
func (u *uiState) getSnapshot(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, u.snapshot(r.Context()))
}

// uiEvent is the data of one `snapshot` event: a sequence number, when it
// was built, and the snapshot.
type uiEvent struct {
	Seq      uint64          `json:"seq"`
	At       time.Time       `json:"at"`
	Snapshot json.RawMessage `json:"snapshot"`
}

// getEvents serves GET /ui/events: a server-sent event stream with one
// `snapshot` event at once, then one whenever the snapshot changes (looked
// at every uiPoll) and at least one every uiHeartbeat. It ends when the
// client goes away or the process stops (the browser reconnects by itself).
func (u *uiState) getEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	ctx := r.Context()
	poll := time.NewTicker(uiPoll)
	defer poll.Stop()
	var last []byte
	var sent time.Time
	var seq uint64
	var buf bytes.Buffer
	for {
		sctx, cancel := context.WithTimeout(ctx, adminTimeout)
		snap := u.snapshot(sctx)
		cancel()
		body, err := json.Marshal(snap)
		if err != nil {
			return
		}
		if !bytes.Equal(body, last) || time.Since(sent) >= uiHeartbeat {
			seq++
			now := time.Now()
			ev, err := json.Marshal(uiEvent{Seq: seq, At: now, Snapshot: body})
			if err != nil {
				return
			}
			buf.Reset()
			fmt.Fprintf(&buf, "id: %d\nevent: snapshot\ndata: %s\n\n", seq, ev)
			// Per event: the admin server's write timeout would otherwise
			// end a stream that lives longer.
			_ = rc.SetWriteDeadline(now.Add(uiWriteTimeout))
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			last, sent = body, now
		}
		if snap.State == "stopping" {
			return // let the admin server shut down; the page shows the last state
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
	}
}
