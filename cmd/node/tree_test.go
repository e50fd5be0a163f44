package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/zlink-go/zlink/supervisor"
)

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
