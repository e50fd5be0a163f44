package routemesh

import (
	"testing"

	"github.com/zlink-go/zlink/routemesh/internal/handshake"
	"github.com/zlink-go/zlink/wire"
)

// One reason enum: every reason a Reject frame carries reads back as
// itself; a local reason goes out as protocol, and a peer's local or
// unknown reason reads as protocol.
func TestHandshake_RejectReasonsRoundTrip(t *testing.T) {
	for r := wire.RejectWrongMesh; r <= wire.RejectProtocol; r++ {
		if got := fromWire(r.OnWire()); got != r {
			t.Errorf("%v → %v → %v", r, r.OnWire(), got)
		}
	}
	for _, r := range []wire.RejectReason{200, wire.RejectTimeout, wire.RejectNoIntent, wire.RejectOldGenerationAlive} {
		if fromWire(r) != handshake.Protocol {
			t.Errorf("a peer's reason %v is not read as a protocol error", r)
		}
	}
	for _, r := range []handshake.Reason{handshake.Timeout, handshake.NoIntent, wire.RejectOldGenerationAlive} {
		if r.OnWire() != wire.RejectProtocol {
			t.Errorf("%v → %v, want protocol", r, r.OnWire())
		}
	}
}
