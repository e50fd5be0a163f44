package test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

// cliHealth is the body of GET /healthz and GET /readyz.
type cliHealth struct {
	Status  string            `json:"status"`
	Live    bool              `json:"live"`
	Ready   bool              `json:"ready"`
	Meshes  map[string]string `json:"meshes"`
	Reasons []string          `json:"reasons"`
}

// Two Object Clients without Channel Server membership, each a manual peer
// of the other, need no connection: NotRequired is no failure, so both are
// ready and live.
func TestHealth_CLI_NotRequiredPeersDoNotFailReadiness(t *testing.T) {
	loc := locationtest.StartRedis(t).URL() // an object role needs a Location Store
	epA, epB := freeEndpoint(t), freeEndpoint(t)
	a := cliStartNode(t, "--rid", "hna", "--object", "client", "--location", loc, "--listen", epA, "--peer", epB+"#hnb")
	b := cliStartNode(t, "--rid", "hnb", "--object", "client", "--location", loc, "--listen", epB, "--peer", epA+"#hna")
	for _, n := range []*cliNode{a, b} {
		other := map[*cliNode]string{a: "hnb", b: "hna"}[n]
		var st cliStatus
		cliWait(t, n.rid+" shows "+other+" NotRequired", 10*time.Second, func() bool {
			cliGetJSON(t, n.admin, "/status", &st)
			return st.peerState(other) == "NotRequired"
		})
		for _, path := range []string{"/readyz", "/healthz"} {
			var h cliHealth
			if code := cliGetJSON(t, n.admin, path, &h); code != http.StatusOK || !h.Ready || !h.Live || len(h.Reasons) != 0 {
				t.Fatalf("%s %s = %d %+v", n.rid, path, code, h)
			}
		}
	}
}

// A healthy node is ready; a drained one is live but not ready, and says
// why.
func TestHealth_CLI_DrainingIsNotReady(t *testing.T) {
	n := cliStartNode(t, "--rid", "hd1", "--server", "match")
	var h cliHealth
	if code := cliGetJSON(t, n.admin, "/readyz", &h); code != http.StatusOK || h.Status != "ok" || h.Meshes["default"] != "ready" {
		t.Fatalf("/readyz = %d %+v", code, h)
	}
	r := cliRun(t, 20*time.Second, "drain", "--admin", n.admin, "--timeout", "10s")
	if r.code != 0 {
		t.Fatalf("drain: exit %d %s", r.code, r.stderr)
	}
	h = cliHealth{}
	if code := cliGetJSON(t, n.admin, "/readyz", &h); code != http.StatusServiceUnavailable || h.Ready ||
		len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0], "mesh default: draining") {
		t.Fatalf("/readyz while draining = %d %+v", code, h)
	}
	h = cliHealth{}
	if code := cliGetJSON(t, n.admin, "/healthz", &h); code != http.StatusOK || !h.Live {
		t.Fatalf("/healthz while draining = %d %+v", code, h)
	}
}
