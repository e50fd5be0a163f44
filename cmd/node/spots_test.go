package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/supervisor"
	"github.com/zlink-go/zlink/wire"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return resp.StatusCode
}

// Without an object role the mesh has no Spot runtime: GET /spots says so
// per mesh; bad query parameters are refused.
func TestSpots_AdminWithoutRuntimeAndBadQueries(t *testing.T) {
	_, _, base := healthApp(t, time.Second, func(o *zlink.Options) {
		o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("g1")
		o.AddRouteMesh("chat").Listen("tcp://127.0.0.1:0").SetRoutingID("c1")
	})
	var resp spotsResponse
	if code := getJSON(t, base+"/spots?kind=counter&list=5", &resp); code != http.StatusOK {
		t.Fatalf("GET /spots = %d", code)
	}
	if len(resp.Meshes) != 2 || resp.Meshes[0].Mesh != "game" || resp.Meshes[0].RID != "g1" || resp.Meshes[1].Mesh != "chat" {
		t.Fatalf("meshes %+v", resp.Meshes)
	}
	for _, m := range resp.Meshes {
		if m.Enabled || m.Stats != nil || m.List != nil {
			t.Fatalf("mesh without Spots: %+v", m)
		}
	}
	resp = spotsResponse{}
	if code := getJSON(t, base+"/spots?mesh=chat", &resp); code != http.StatusOK || len(resp.Meshes) != 1 || resp.Meshes[0].Mesh != "chat" {
		t.Fatalf("GET /spots?mesh=chat = %d %+v", code, resp)
	}
	for _, q := range []string{"?list=3", "?kind=counter&list=0", "?kind=counter&list=x", fmt.Sprintf("?kind=counter&list=%d", maxSpotList+1)} {
		var e errorResponse
		if code := getJSON(t, base+"/spots"+q, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, "list") {
			t.Fatalf("GET /spots%s = %d %+v, want 400", q, code, e)
		}
	}
	var e errorResponse
	if code := getJSON(t, base+"/spots?mesh=nope", &e); code != http.StatusNotFound {
		t.Fatalf("GET /spots?mesh=nope = %d %+v", code, e)
	}
}

// A folded node (a Spot kind) keeps its children=N in the text tree, also
// after the JSON round trip `zlink-node tree` makes.
func TestTree_FoldedKindKeepsItsCount(t *testing.T) {
	root := supervisor.Node{Path: "/", Kind: "system", State: supervisor.Running, Children: []supervisor.Node{
		{Path: "/host/mesh:game/spots", Kind: "supervisor", State: supervisor.Running, Children: []supervisor.Node{
			{Path: "/host/mesh:game/spots/counter", Kind: "spot-kind", State: supervisor.Running, Folded: 3, Children: []supervisor.Node{}},
			{Path: "/host/mesh:game/spots/lease", Kind: "lease", State: supervisor.Running, Children: []supervisor.Node{}},
		}},
	}}
	raw, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"folded_children":3`)) {
		t.Fatalf("tree JSON lacks folded_children: %s", raw)
	}
	var back supervisor.Node
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := formatTree(&b, back); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("tree:\n%s", b.String())
	}
	if l := lines[2]; !strings.HasPrefix(l, "    /host/mesh:game/spots/counter spot-kind running ") || !strings.HasSuffix(l, " children=3") {
		t.Fatalf("folded line %q", l)
	}
	if strings.Contains(lines[3], "children=") {
		t.Fatalf("unfolded line %q", lines[3])
	}
}

func TestSpots_ErrorCodes(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", spot.ErrCycle), "cycle"},
		{fmt.Errorf("x: %w", spot.ErrFenced), "fenced"},
		{fmt.Errorf("x: %w", spot.ErrRole), "role"},
		{fmt.Errorf("x: %w", spot.ErrNoTarget), "no_target"},
		{fmt.Errorf("x: %w", zerr.ErrTimeout), "timeout"},
		{wire.ErrorOf(wire.CodeUnknownPacket, "no packet"), "unknown_packet"},
		{wire.ErrorOf(wire.CodeBusy, "full"), "busy"},
		{errors.New("boom"), "handler"},
	}
	for _, tc := range cases {
		if got := spotCode(tc.err); got != tc.want {
			t.Errorf("spotCode(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
