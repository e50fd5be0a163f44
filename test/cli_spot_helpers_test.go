package test

// Helpers of the Spot command-line tests (cli_spot_test.go).

import (
	"strings"
	"testing"
	"time"
)

// spotCall runs `zlink-node spot --location loc args…`.
func spotCall(t *testing.T, loc string, args ...string) cliResult {
	t.Helper()
	return cliRun(t, 30*time.Second, append([]string{"spot", "--location", loc, "--timeout", "10s"}, args...)...)
}

// spotOK checks `ok rid=<rid> result=<want>` and exit 0; it returns the RID.
func spotOK(t *testing.T, r cliResult, want string) string {
	t.Helper()
	line := strings.TrimSuffix(r.stdout, "\n")
	f := cliFields(line)
	if r.code != 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "ok rid=") || f["rid"] == "" || f["result"] != want ||
		line != "ok rid="+f["rid"]+" result="+want {
		t.Fatalf("spot: exit %d stdout %q, want `ok rid=<rid> result=%s`; stderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	return f["rid"]
}

// spotErr checks one line `error <code> <message>` (message containing
// msg) and exit 1.
func spotErr(t *testing.T, r cliResult, code, msg string) {
	t.Helper()
	line := strings.TrimSuffix(r.stdout, "\n")
	if r.code != 1 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "error "+code+" ") || !strings.Contains(line, msg) {
		t.Fatalf("spot: exit %d stdout %q, want exit 1 and `error %s …%s…`; stderr:\n%s", r.code, r.stdout, code, msg, r.stderr)
	}
}

// cliSpots is GET /spots.
type cliSpots struct {
	Meshes []cliSpotsMesh `json:"meshes"`
}

type cliSpotsMesh struct {
	Mesh    string         `json:"mesh"`
	RID     string         `json:"rid"`
	Enabled bool           `json:"enabled"`
	Stats   *cliSpotsStats `json:"stats"`
	List    *struct {
		Kind  string   `json:"kind"`
		Limit int      `json:"limit"`
		IDs   []string `json:"ids"`
		Error string   `json:"error"`
	} `json:"list"`
}

type cliSpotsKind struct {
	Kind          string `json:"kind"`
	Active        int64  `json:"active"`
	Activations   uint64 `json:"activations"`
	Deactivations uint64 `json:"deactivations"`
}

type cliSpotsStats struct {
	Role            string         `json:"role"`
	Kinds           []cliSpotsKind `json:"kinds"`
	Redirects       uint64         `json:"redirects"`
	Fenced          uint64         `json:"fenced"`
	Overlaps        uint64         `json:"overlaps"`
	LeaseGeneration uint64         `json:"lease_generation"`
	LeaseValid      bool           `json:"lease_valid"`
}

func (s cliSpots) mesh(t *testing.T, name string) cliSpotsMesh {
	t.Helper()
	for _, m := range s.Meshes {
		if m.Mesh == name {
			return m
		}
	}
	t.Fatalf("GET /spots has no mesh %q: %+v", name, s)
	return cliSpotsMesh{}
}

func (s *cliSpotsStats) kind(name string) *cliSpotsKind {
	if s == nil {
		return nil
	}
	for i := range s.Kinds {
		if s.Kinds[i].Kind == name {
			return &s.Kinds[i]
		}
	}
	return nil
}

// cliTreeNode is GET /tree as the tests read it.
type cliTreeNode struct {
	Path     string        `json:"path"`
	Kind     string        `json:"kind"`
	State    string        `json:"state"`
	Folded   int           `json:"folded_children"`
	Children []cliTreeNode `json:"children"`
}

// find returns the first node (depth first) that match accepts.
func (n *cliTreeNode) find(match func(*cliTreeNode) bool) *cliTreeNode {
	if match(n) {
		return n
	}
	for i := range n.Children {
		if f := n.Children[i].find(match); f != nil {
			return f
		}
	}
	return nil
}
