package routemesh

import (
	"testing"

	"github.com/zlink-go/zlink/routemesh/internal/handshake"
	"github.com/zlink-go/zlink/wire"
)

// Every reject reason on the wire maps to a handshake reason and back.
func TestHandshake_RejectReasonsRoundTrip(t *testing.T) {
	for r := wire.RejectWrongMesh; r <= wire.RejectProtocol; r++ {
		if got := toWire(fromWire(r)); got != r {
			t.Errorf("%v → %v → %v", r, fromWire(r), got)
		}
	}
	if fromWire(wire.RejectReason(200)) != handshake.Protocol {
		t.Error("an unknown reject reason is not a protocol error")
	}
	for _, r := range []handshake.Reason{handshake.Timeout, handshake.NoIntent} {
		if toWire(r) != wire.RejectProtocol {
			t.Errorf("%v → %v, want protocol", r, toWire(r))
		}
	}
}
