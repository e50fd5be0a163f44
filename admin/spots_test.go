package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/spot"
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
	var resp SpotsResponse
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
	resp = SpotsResponse{}
	if code := getJSON(t, base+"/spots?mesh=chat", &resp); code != http.StatusOK || len(resp.Meshes) != 1 || resp.Meshes[0].Mesh != "chat" {
		t.Fatalf("GET /spots?mesh=chat = %d %+v", code, resp)
	}
	for _, q := range []string{"?list=3", "?kind=counter&list=0", "?kind=counter&list=x", fmt.Sprintf("?kind=counter&list=%d", maxSpotList+1)} {
		var e ErrorResponse
		if code := getJSON(t, base+"/spots"+q, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, "list") {
			t.Fatalf("GET /spots%s = %d %+v, want 400", q, code, e)
		}
	}
	var e ErrorResponse
	if code := getJSON(t, base+"/spots?mesh=nope", &e); code != http.StatusNotFound {
		t.Fatalf("GET /spots?mesh=nope = %d %+v", code, e)
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
		if got := SpotCode(tc.err); got != tc.want {
			t.Errorf("SpotCode(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// GET /spots/owner refuses missing parameters and an unknown mesh, and
// says not_enabled on a node without a Location Store.
func TestSpotOwner_AdminRefusals(t *testing.T) {
	_, _, base := healthApp(t, time.Second, func(o *zlink.Options) {
		o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("g1")
	})
	for _, tc := range []struct {
		query  string
		status int
		code   string
	}{
		{"", http.StatusBadRequest, "bad_request"},
		{"?kind=counter", http.StatusBadRequest, "bad_request"},
		{"?id=x", http.StatusBadRequest, "bad_request"},
		{"?kind=counter&id=x&timeout=forever", http.StatusBadRequest, "bad_request"},
		{"?kind=counter&id=x&mesh=nope", http.StatusNotFound, "unknown_mesh"},
		{"?kind=counter&id=x", http.StatusConflict, "not_enabled"},
	} {
		var e ErrorResponse
		if code := getJSON(t, base+"/spots/owner"+tc.query, &e); code != tc.status || e.Code != tc.code {
			t.Errorf("GET /spots/owner%s = %d %+v, want %d %s", tc.query, code, e, tc.status, tc.code)
		}
	}
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", spot.ErrNotFound), "not_found"},
		{fmt.Errorf("x: %w", location.ErrInvalid), "invalid"},
		{fmt.Errorf("x: %w", location.ErrCorrupt), "corrupt"},
		{fmt.Errorf("x: %w", spot.ErrManualTopology), "blocked"},
		{fmt.Errorf("x: %w", spot.ErrNotEnabled), "not_enabled"},
		{fmt.Errorf("x: %w", spot.ErrUnknownKind), "unknown_kind"},
		{fmt.Errorf("x: %w", spot.ErrHandler), "handler"},
		{fmt.Errorf("x: %w", spot.ErrFenced), "fenced"},
		{errors.New("boom"), "failed"},
	} {
		if got := ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
