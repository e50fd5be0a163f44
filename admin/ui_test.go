package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// uiTestEvent is one `snapshot` event as the page reads it.
type uiTestEvent struct {
	ID       string
	Raw      string    // the snapshot as sent
	Seq      uint64    `json:"seq"`
	At       time.Time `json:"at"`
	Snapshot struct {
		State  string `json:"state"`
		Meshes []struct {
			Mesh   string `json:"mesh"`
			Error  string `json:"error"`
			Status *struct {
				RID   string `json:"rid"`
				State string `json:"state"`
				Peers []struct {
					RID   string `json:"rid"`
					State string `json:"state"`
				} `json:"peers"`
			} `json:"status"`
			Channels []uiTestChannel `json:"channels"`
			Spots    struct {
				Mesh    string `json:"mesh"`
				Enabled bool   `json:"enabled"`
			} `json:"spots"`
		} `json:"meshes"`
		Tree *struct {
			Path     string            `json:"path"`
			Children []json.RawMessage `json:"children"`
		} `json:"tree"`
	} `json:"snapshot"`
}

type uiTestChannel struct {
	Name        string `json:"name"`
	Role        string `json:"role"`
	Weight      int    `json:"weight"`
	Samples     int    `json:"samples"`
	LastOutcome string `json:"last_outcome"`
	Servers     []struct {
		RID    string  `json:"rid"`
		Weight int     `json:"weight"`
		Skip   string  `json:"skip"`
		Picks  int     `json:"picks"`
		Share  float64 `json:"share"`
	} `json:"servers"`
}

func (e *uiTestEvent) channel(name string) *uiTestChannel {
	for _, m := range e.Snapshot.Meshes {
		for i := range m.Channels {
			if m.Channels[i].Name == name {
				return &m.Channels[i]
			}
		}
	}
	return nil
}

func (c *uiTestChannel) server(rid string) (weight int, skip string, ok bool) {
	for _, s := range c.Servers {
		if s.RID == rid {
			return s.Weight, s.Skip, true
		}
	}
	return 0, "", false
}

// readUIEvents parses a server-sent event stream into events; the channel
// closes when the stream ends.
func readUIEvents(t *testing.T, body io.Reader) <-chan uiTestEvent {
	out := make(chan uiTestEvent, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		var id, event string
		var data bytes.Buffer
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if event == "snapshot" {
					var ev uiTestEvent
					if err := json.Unmarshal(data.Bytes(), &ev); err != nil {
						t.Errorf("event %s: %v: %s", id, err, data.Bytes())
						return
					}
					var raw struct {
						Snapshot json.RawMessage `json:"snapshot"`
					}
					_ = json.Unmarshal(data.Bytes(), &raw)
					ev.ID, ev.Raw = id, string(raw.Snapshot)
					out <- ev
				}
				id, event = "", ""
				data.Reset()
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data.WriteString(strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out
}

// uiHost starts one in-process Host.
func uiHost(t *testing.T, build func(o *zlink.Options)) *zlink.Host {
	t.Helper()
	o := zlink.NewOptions()
	build(o)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		if err := h.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

func echoServer(rid string) func(o *zlink.Options) {
	return func(o *zlink.Options) {
		o.AddRouteMesh("default").Listen("tcp://127.0.0.1:0").SetRoutingID(rid).
			Channel("match").Server().SetWeight(100).
			HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	}
}

// The SSE stream of a node that calls two Servers: snapshots come at once
// and then every second or on change; the Servers' weights, a weight change
// on one of them and one made through the admin API show up in later
// snapshots; the stream outlives the admin server's read timeout and ends
// when the process stops. The dashboard needs no token.
func TestUI_EventsStreamSnapshotsAndWeightChanges(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, healthLeaks...) }) // runs last
	b := uiHost(t, echoServer("b"))
	c := uiHost(t, echoServer("c"))
	bn, cn := b.Mesh("default"), c.Mesh("default")
	a := uiHost(t, func(o *zlink.Options) {
		mb := o.AddRouteMesh("default").Listen("tcp://127.0.0.1:0").SetRoutingID("a").
			AddPeer(bn.Endpoint(), "b").AddPeer(cn.Endpoint(), "c")
		mb.Channel("match").Client()
		mb.Channel("own").Server().SetWeight(50).
			HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	})
	an := a.Mesh("default")
	const token = "ui-test-token-0123456789"
	app, err := New(Options{Token: []byte(token)})
	if err != nil {
		t.Fatal(err)
	}
	app.SetHost(a)
	const readTimeout = 300 * time.Millisecond
	srv := httptest.NewUnstartedServer(app)
	srv.Config.ReadTimeout = readTimeout // as zlink-node run's admin server has one
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := an.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pb, _ := st.Peer("b")
		pc, _ := st.Peer("c")
		if pb.State == routemesh.PeerReady && pc.State == routemesh.PeerReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a does not see b and c ready: %+v", st.Peers)
		}
		<-time.After(20 * time.Millisecond) // poll interval of a condition wait
	}

	// The page and its assets are served, without a token.
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ path, ctype, has string }{
		{"/ui/", "text/html", `<script src="app.js"`},
		{"/ui/app.js", "javascript", "new EventSource('events')"},
		{"/ui/style.css", "text/css", "svg.graph"},
	} {
		resp, err := client.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.has) {
			t.Fatalf("GET %s = %d %q, want %s with %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.ctype, tc.has)
		}
	}
	resp, err := client.Get(srv.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("GET /ui = %d Location %q, want a redirect to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}

	// The stream.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	connected := time.Now()
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() }) // before srv.Close
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /ui/events = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readUIEvents(t, resp.Body)
	var last uiTestEvent
	next := func(what string) uiTestEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended %s after connecting, waiting for %s", time.Since(connected).Round(time.Millisecond), what)
			}
			if ev.Seq != last.Seq+1 || ev.ID != strconv.FormatUint(ev.Seq, 10) || ev.At.Before(last.At) {
				t.Fatalf("event id %s seq %d at %s after seq %d at %s", ev.ID, ev.Seq, ev.At, last.Seq, last.At)
			}
			last = ev
			return ev
		case <-time.After(5 * time.Second):
			t.Fatalf("no event within 5s waiting for %s", what)
		}
		return uiTestEvent{}
	}
	// calls makes select-one calls from a, so it records selections.
	calls := func(n int) {
		t.Helper()
		for range n {
			if _, err := an.Call(ctx, "match", "echo", nil); err != nil {
				t.Fatalf("call: %v", err)
			}
		}
	}
	// waitEvent reads events (making calls between them) until cond holds.
	waitEvent := func(what string, cond func(ev *uiTestEvent) bool) uiTestEvent {
		t.Helper()
		end := time.Now().Add(10 * time.Second)
		for {
			ev := next(what)
			if cond(&ev) {
				return ev
			}
			if time.Now().After(end) {
				t.Fatalf("no snapshot within 10s where %s; last: %+v", what, ev.Snapshot)
			}
			calls(32)
		}
	}

	first := next("the first snapshot")
	if first.Seq != 1 || first.Snapshot.State != "ok" || len(first.Snapshot.Meshes) != 1 {
		t.Fatalf("first snapshot: %+v", first)
	}
	m := first.Snapshot.Meshes[0]
	if m.Mesh != "default" || m.Status == nil || m.Status.RID != "a" || m.Status.State != "ready" || len(m.Status.Peers) != 2 ||
		m.Spots.Mesh != "default" || m.Spots.Enabled || first.Snapshot.Tree == nil || first.Snapshot.Tree.Path != "/" {
		t.Fatalf("first snapshot mesh: %+v tree %+v", m, first.Snapshot.Tree)
	}
	if ch := first.channel("own"); ch == nil || ch.Role != "server" || ch.Weight != 50 {
		t.Fatalf("channel own in the first snapshot: %+v", ch)
	}
	// A change is sent when seen; an unchanged snapshot still goes out
	// once a second (the heartbeat), never more often.
	prev, end := first, time.Now().Add(6*time.Second)
	for {
		ev := next("the heartbeat")
		gap := ev.At.Sub(prev.At)
		if gap > 2*uiHeartbeat {
			t.Fatalf("snapshots %s apart, want at most about %s", gap, uiHeartbeat)
		}
		if ev.Raw == prev.Raw {
			if gap < uiHeartbeat-100*time.Millisecond {
				t.Fatalf("an unchanged snapshot %s after the last, want the heartbeat's %s", gap, uiHeartbeat)
			}
			break
		}
		if time.Now().After(end) {
			t.Fatal("no unchanged snapshot within 6s of an idle node: no heartbeat seen")
		}
		prev = ev
	}

	// Selections show both Servers with their weights and shares.
	ev := waitEvent("match shows b and c at weight 100 over a few selections", func(ev *uiTestEvent) bool {
		ch := ev.channel("match")
		if ch == nil || ch.Role != "client" || ch.Samples < 3 || ch.LastOutcome != "picked" {
			return false
		}
		wb, _, okb := ch.server("b")
		wc, _, okc := ch.server("c")
		return okb && okc && wb == 100 && wc == 100
	})
	ch := ev.channel("match")
	picks, share := 0, 0.0
	for _, s := range ch.Servers {
		picks += s.Picks
		share += s.Share
	}
	if picks != ch.Samples || share < 0.999 || share > 1.001 {
		t.Fatalf("picks %d of %d samples, shares sum to %f: %+v", picks, ch.Samples, share, ch)
	}

	// A weight change on a Server reaches the caller's next selections.
	if err := bn.SetWeight(ctx, "match", 0); err != nil {
		t.Fatal(err)
	}
	waitEvent("match shows b at weight 0, skipped", func(ev *uiTestEvent) bool {
		ch := ev.channel("match")
		if ch == nil {
			return false
		}
		w, skip, ok := ch.server("b")
		return ok && w == 0 && skip == "weight 0"
	})

	// A weight change through the admin API (which needs the token) shows
	// up in a later snapshot.
	post := func(token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/weight", strings.NewReader(`{"channel":"own","weight":7}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(""); code != http.StatusUnauthorized {
		t.Fatalf("POST /weight without the token = %d", code)
	}
	if code := post(token); code != http.StatusOK {
		t.Fatalf("POST /weight = %d", code)
	}
	waitEvent("own shows weight 7", func(ev *uiTestEvent) bool {
		ch := ev.channel("own")
		return ch != nil && ch.Weight == 7
	})

	// The stream outlived the server's read timeout.
	if d := time.Since(connected); d < 3*readTimeout {
		waitEvent("the stream outlives the read timeout", func(*uiTestEvent) bool { return time.Since(connected) > 3*readTimeout })
	}

	// GET /ui/snapshot is the same view, once.
	var snap struct {
		State  string `json:"state"`
		Meshes []struct {
			Mesh string `json:"mesh"`
		} `json:"meshes"`
	}
	if code := getJSON(t, srv.URL+"/ui/snapshot", &snap); code != http.StatusOK || snap.State != "ok" || len(snap.Meshes) != 1 {
		t.Fatalf("GET /ui/snapshot = %d %+v", code, snap)
	}

	// A stopping process: a last snapshot says so and the stream ends.
	app.MarkStopping()
	waitEvent("state stopping", func(ev *uiTestEvent) bool { return ev.Snapshot.State == "stopping" })
	select {
	case _, ok := <-events:
		if ok {
			t.Fatal("an event after the stopping one")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after the stopping snapshot")
	}
}

// Before the host starts, the stream says so.
func TestUI_SnapshotBeforeStart(t *testing.T) {
	app, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	defer srv.Close()
	var snap struct {
		State  string            `json:"state"`
		Meshes []json.RawMessage `json:"meshes"`
		Tree   json.RawMessage   `json:"tree"`
	}
	if code := getJSON(t, srv.URL+"/ui/snapshot", &snap); code != http.StatusOK || snap.State != "starting" || snap.Meshes == nil || len(snap.Meshes) != 0 || snap.Tree != nil {
		t.Fatalf("GET /ui/snapshot before start = %d %+v", code, snap)
	}
}
