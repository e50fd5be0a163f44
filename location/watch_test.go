package location

import (
	"context"
	"testing"
)

func TestWatcher_CoalescesPerRID(t *testing.T) {
	w := newWatcher("m")
	w.notify(EventPut, "a")
	w.notify(EventPut, "b")
	w.notify(EventDelete, "a") // replaces a's Put, keeps a's place
	w.notify(EventPut, "b")
	want := []Event{{EventDelete, "m", "a"}, {EventPut, "m", "b"}}
	for i, ev := range want {
		got, ok := w.pop()
		if !ok || got != ev {
			t.Fatalf("pop %d: %+v %v, want %+v", i, got, ok, ev)
		}
	}
	if ev, ok := w.pop(); ok {
		t.Fatalf("extra event %+v", ev)
	}
}

func TestWatcher_NotifyNeverBlocks(t *testing.T) {
	w := newWatcher("m")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.forward(ctx)
	}()
	// Nobody reads: far more notifications than the channel holds.
	for i := range 10 * watchBuffer {
		w.notify(EventPut, string(rune('A'+i%40)))
	}
	cancel()
	<-done
	n := 0
	for range w.out {
		n++
	}
	if n > watchBuffer {
		t.Fatalf("%d events buffered, capacity %d", n, watchBuffer)
	}
}

func TestEnums_String(t *testing.T) {
	for v, s := range map[interface{ String() string }]string{
		RoleNone: "None", RoleClient: "Client", RoleServer: "Server", ObjectRole(0): "ObjectRole(0)",
		EventPut: "Put", EventDelete: "Delete", EventKind(0): "EventKind(0)",
	} {
		if v.String() != s {
			t.Errorf("%v.String() = %q, want %q", v, v.String(), s)
		}
	}
}

func TestParseEvent(t *testing.T) {
	for in, want := range map[string]Event{"p a": {EventPut, "", "a"}, "d b c": {EventDelete, "", "b c"}} {
		k, rid, ok := parseEvent(in)
		if !ok || k != want.Kind || rid != want.RID {
			t.Errorf("parseEvent(%q) = %v %q %v", in, k, rid, ok)
		}
	}
	for _, in := range []string{"", "p", "p ", "x a"} {
		if _, _, ok := parseEvent(in); ok {
			t.Errorf("parseEvent(%q) accepted", in)
		}
	}
}
