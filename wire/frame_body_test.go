package wire

import (
	"errors"
	"testing"
)

// A frame carries exactly the body of its type (a batch may be empty):
// every other combination of bodies is refused as a protocol error.
func TestCheckBody_ExactlyTheBodyOfItsType(t *testing.T) {
	hello := &Hello{Identity: Identity{Mesh: "m", RID: "r", Generation: 1, Revision: 1, ObjectRole: 1}}
	welcome := &Welcome{Identity: hello.Identity}
	for typ := FrameHello; typ <= FrameBatch; typ++ {
		for mask := range 32 {
			f := &Frame{Type: typ}
			if mask&1 != 0 {
				f.Hello = hello
			}
			if mask&2 != 0 {
				f.Welcome = welcome
			}
			if mask&4 != 0 {
				f.Auth = &Auth{}
			}
			if mask&8 != 0 {
				f.Reject = &Reject{Reason: RejectProtocol}
			}
			if mask&16 != 0 {
				f.Batch = []Envelope{{Kind: KindSend}}
			}
			own := 1 << (typ - 1)
			want := mask == own || typ == FrameBatch && mask == 0
			err := checkBody(f)
			if want && errors.Is(err, errFrameBody) || !want && !errors.Is(err, errFrameBody) {
				t.Errorf("type %v with bodies %05b: %v (want accepted: %v)", typ, mask, err, want)
			}
		}
	}
	if err := checkBody(&Frame{Type: FrameBatch + 1}); !errors.Is(err, ErrVersion) {
		t.Errorf("an unknown frame type: %v, want ErrVersion", err)
	}
}
