package handshake

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// Two nodes dial each other any number of times, frames of different pipes
// arrive in any order, some frames are lost, and time passes. Whatever
// happens:
//   - no node ever declares a second pipe ready, and no ready pipe is
//     closed or replaced by the handshake;
//   - the follower is ready only on a pipe the arbiter declared ready;
//   - with no frame lost, both end on the same single ready pipe.
func TestHandshake_AnyInterleaving(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ridA := rapid.StringMatching(`[a-z0-9]{1,4}`).Draw(t, "ridA")
		ridB := rapid.StringMatching(`[a-z0-9]{1,4}`).Filter(func(s string) bool { return s != ridA }).Draw(t, "ridB")
		s := newSim(t)
		s.add(ident(ridA, rapid.Uint64Min(1).Draw(t, "genA")))
		s.add(ident(ridB, rapid.Uint64Min(1).Draw(t, "genB")))
		arbiter, follower := ridA, ridB
		if ridB < ridA {
			arbiter, follower = ridB, ridA
		}
		other := map[string]string{ridA: ridB, ridB: ridA}
		maxDrops := rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(t, "maxDrops")
		dials := rapid.IntRange(1, 4).Draw(t, "dials")
		pending := dials // dials not yet started
		for step := 0; step < 200; step++ {
			op := rapid.IntRange(0, 9).Draw(t, "op")
			switch {
			case pending > 0 && (op < 3 || len(s.queue) == 0):
				from := rapid.SampledFrom([]string{ridA, ridB}).Draw(t, "from")
				s.dial(from, other[from], from+">"+strconv.Itoa(pending))
				pending--
			case len(s.queue) > 0 && op == 3 && len(s.dropped) < maxDrops:
				d := s.deliverable()
				i := d[rapid.IntRange(0, len(d)-1).Draw(t, "drop")]
				s.dropped = append(s.dropped, s.queue[i])
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
			case len(s.queue) > 0:
				d := s.deliverable()
				s.deliver(d[rapid.IntRange(0, len(d)-1).Draw(t, "deliver")])
			default:
				s.advance(timeout) // every running handshake times out
			}
			s.checkNoTearDown()
			for _, p := range s.readyPipes(follower) {
				if got := s.readyPipes(arbiter); len(got) != 1 || got[0] != p {
					t.Fatalf("follower %s ready on %s, arbiter %s ready on %v", follower, p, arbiter, got)
				}
			}
			if pending == 0 && len(s.queue) == 0 && step > 0 {
				break
			}
		}
		if len(s.dropped) == 0 {
			s.checkOneConnection(ridA, ridB)
		}
	})
}
