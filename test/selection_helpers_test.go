package test

import (
	"testing"

	"github.com/zlink-go/zlink/routemesh"
)

// recordedSelection returns the last selection node n recorded on channel
// and fails the test when none was recorded: a check on the candidates of
// a missing selection would pass without looking at anything.
func recordedSelection(t *testing.T, n *routemesh.Node, channel string) *routemesh.Selection {
	t.Helper()
	sel := lastSelection(t, n, channel)
	if sel == nil || len(sel.Candidates) == 0 {
		t.Fatalf("%s recorded no selection on %s (%+v)", n.RID(), channel, sel)
	}
	return sel
}
