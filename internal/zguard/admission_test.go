package zguard

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"pgregory.net/rapid"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestPendingBook_Caps(t *testing.T) {
	b := newPendingBook(pendingLimits{max: 6, perSource: 2, reserved: 2})
	stranger := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}) }
	known := addr("10.0.1.1")
	b.learn(known)

	// One source takes at most perSource slots.
	for range 2 {
		if _, err := b.admit(stranger(1)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := b.admit(stranger(1))
	var pe *PendingLimitError
	if !errors.As(err, &pe) || !pe.PerSource || !errors.Is(err, ErrTooManyFromSource) || !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("third from one source: %v", err)
	}
	// Strangers take at most max-reserved slots, however many sources.
	for i := 2; i <= 3; i++ {
		if _, err := b.admit(stranger(i)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = b.admit(stranger(4))
	if !errors.As(err, &pe) || !pe.Strangers || errors.Is(err, ErrTooManyFromSource) {
		t.Fatalf("a stranger past the strangers' share: %v", err)
	}
	// The reserve is the known sources'.
	for range 2 {
		k, err := b.admit(known)
		if err != nil || !k {
			t.Fatalf("a known source in the reserve: known=%v err=%v", k, err)
		}
	}
	_, err = b.admit(known)
	if !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("past every slot: %v", err)
	}
	// A freed stranger slot serves a stranger again.
	b.release(stranger(1), false)
	if _, err := b.admit(stranger(4)); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

func TestPendingBook_KnownSourcesAreBounded(t *testing.T) {
	b := newPendingBook(pendingLimits{max: 4, perSource: 4, reserved: 1})
	for i := range maxKnownSources + 10 {
		b.learn(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	if len(b.known) != maxKnownSources {
		t.Fatalf("%d known sources, bound %d", len(b.known), maxKnownSources)
	}
	// The ones that authenticated longest ago were forgotten.
	if _, ok := b.known[netip.AddrFrom4([4]byte{10, 0, 0, 0})]; ok {
		t.Fatal("the oldest known source was kept")
	}
	if _, ok := b.known[netip.AddrFrom4([4]byte{10, 0, 16, 9})]; !ok {
		t.Fatal("the newest known source was forgotten")
	}
}

func TestSourceOf(t *testing.T) {
	for _, tt := range []struct {
		in   net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 1}, "127.0.0.2"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 1}, "10.1.2.3"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 1}, "2001:db8:1:2::"},
	} {
		if got := sourceOf(tt.in); got.String() != tt.want {
			t.Errorf("sourceOf(%v) = %v, want %s", tt.in, got, tt.want)
		}
	}
	if got := sourceOf(&net.UnixAddr{Name: "x"}); got.IsValid() {
		t.Errorf("sourceOf(unix) = %v", got)
	}
}

// The book against a naive oracle that recounts every pending connection:
// whatever the order of admits, releases and handshakes, it admits exactly
// what the caps allow and its counts never drift.
func TestPendingBook_Oracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lim := pendingLimits{max: rapid.IntRange(1, 12).Draw(t, "max"), perSource: rapid.IntRange(1, 12).Draw(t, "perSource")}
		lim.reserved = rapid.IntRange(0, lim.max-1).Draw(t, "reserved")
		b := newPendingBook(lim)
		type slot struct {
			src   netip.Addr
			known bool
		}
		var live []slot
		known := map[netip.Addr]bool{}
		srcGen := rapid.Custom(func(t *rapid.T) netip.Addr {
			return netip.AddrFrom4([4]byte{10, 0, 0, byte(rapid.IntRange(1, 5).Draw(t, "src"))})
		})
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				src := srcGen.Draw(t, "admit")
				total, strangers, mine := len(live), 0, 0
				for _, s := range live {
					if !s.known {
						strangers++
					}
					if s.src == src {
						mine++
					}
				}
				wantOK := total < lim.max && mine < lim.perSource && (known[src] || strangers < lim.max-lim.reserved)
				k, err := b.admit(src)
				if (err == nil) != wantOK || k != known[src] {
					t.Fatalf("admit %v: known=%v err=%v; oracle ok=%v known=%v (total %d strangers %d mine %d)",
						src, k, err, wantOK, known[src], total, strangers, mine)
				}
				if err == nil {
					live = append(live, slot{src, k})
				}
			case 1:
				if len(live) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(live)-1).Draw(t, "release")
				b.release(live[i].src, live[i].known)
				live = append(live[:i], live[i+1:]...)
			case 2:
				src := srcGen.Draw(t, "learn")
				b.learn(src)
				known[src] = true
			}
			if b.total != len(live) {
				t.Fatalf("total %d, oracle %d", b.total, len(live))
			}
		}
	})
}
