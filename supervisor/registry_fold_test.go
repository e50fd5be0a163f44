package supervisor

import (
	"strings"
	"testing"
)

func TestRegistry_FoldedNodeCountsChildren(t *testing.T) {
	r := NewRegistry()
	if err := r.AddFolded("/k", "", "spot-kind", nil, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"/k/a", "/k/b", "/k/c"} {
		if err := r.Add(id, "/k", "spot", nil); err != nil {
			t.Fatal(err)
		}
	}
	n, ok := r.Find("/k")
	if !ok || n.Folded != 3 || len(n.Children) != 0 {
		t.Fatalf("folded node: %+v", n)
	}
	if !strings.Contains(n.String(), "children=3") {
		t.Fatalf("format: %q", n.String())
	}
	if c, ok := r.Find("/k/b"); !ok || c.Path != "/k/b" {
		t.Fatalf("a folded child is still found by path: %+v %v", c, ok)
	}
}
