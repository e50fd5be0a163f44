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
	type parsed struct {
		kind EventKind
		rid  string
		rev  MeshRevision
	}
	for in, want := range map[string]parsed{
		"p e1 7 a":     {EventPut, "a", MeshRevision{"e1", 7}},
		"d e1 8 b c":   {EventDelete, "b c", MeshRevision{"e1", 8}},
		"p  0 a":       {EventPut, "a", MeshRevision{}},
		"p e 18 x y z": {EventPut, "x y z", MeshRevision{"e", 18}},
	} {
		k, rid, rev, ok := parseEvent(in)
		if !ok || (parsed{k, rid, rev}) != want {
			t.Errorf("parseEvent(%q) = %v %q %v %v, want %+v", in, k, rid, rev, ok, want)
		}
	}
	for _, in := range []string{"", "p", "p ", "x e 1 a", "p a", "p e x a", "p e 1", "p e -1 a"} {
		if _, _, _, ok := parseEvent(in); ok {
			t.Errorf("parseEvent(%q) accepted", in)
		}
	}
}
