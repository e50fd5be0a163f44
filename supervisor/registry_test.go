package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/mailbox"
)

func TestRegistry_SnapshotReflectsEachState(t *testing.T) {
	reg := NewRegistry()
	q := mailbox.NewQuota(10, 1000)
	if err := reg.Add("/host", "", "host", nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("/host/mesh:game", "/host", "mesh", q); err != nil {
		t.Fatal(err)
	}
	for _, s := range []State{Starting, Running, Restarting, Stopping, Stopped} {
		if s != Starting {
			reg.SetState("/host/mesh:game", s)
		}
		n, ok := reg.Find("/host/mesh:game")
		if !ok || n.State != s {
			t.Fatalf("state = %v, want %v", n.State, s)
		}
	}
	// Mailbox stats are read live at snapshot time.
	if err := q.Admit(300); err != nil {
		t.Fatal(err)
	}
	n, _ := reg.Find("/host/mesh:game")
	if n.Mailbox != (MailboxStats{Depth: 1, Bytes: 300, MaxMessages: 10, MaxBytes: 1000}) {
		t.Fatalf("mailbox = %+v", n.Mailbox)
	}
	reg.Restarted("/host/mesh:game")
	reg.Failed("/host/mesh:game", errors.New("bad frame"), "trace")
	n, _ = reg.Find("/host/mesh:game")
	if n.Restarts != 1 || n.LastFailure.Reason != "bad frame" || n.LastFailure.Stack != "trace" || n.Parent != "/host" {
		t.Fatalf("node = %+v", n)
	}
	if err := reg.Add("/host", "", "host", nil); !errors.Is(err, ErrDuplicatePath) {
		t.Fatalf("duplicate Add = %v", err)
	}
}

func TestRegistry_SnapshotIsDeepCopy(t *testing.T) {
	reg := NewRegistry()
	_ = reg.Add("/a", "", "k", nil)
	reg.SetInfo("/a", "role", "server")
	reg.Failed("/a", "x", "")
	snap := reg.Snapshot()
	snap.Children[0].Info["role"] = "changed"
	snap.Children[0].LastFailure.Reason = "changed"
	snap.Children[0].Children = append(snap.Children[0].Children, Node{Path: "/fake"})
	n, _ := reg.Find("/a")
	if n.Info["role"] != "server" || n.LastFailure.Reason != "x" || len(n.Children) != 0 {
		t.Fatalf("registry changed through snapshot: %+v", n)
	}
}

func TestRegistry_RemoveDropsSubtree(t *testing.T) {
	reg := NewRegistry()
	_ = reg.Add("/a", "", "k", nil)
	_ = reg.Add("/a/b", "/a", "k", nil)
	_ = reg.Add("/orphan", "/missing", "k", nil)
	reg.Remove("/a")
	reg.Remove(RootPath)
	snap := reg.Snapshot()
	var paths []string
	for _, c := range snap.Children {
		paths = append(paths, c.Path)
	}
	if !slices.Equal(paths, []string{"/orphan"}) {
		t.Fatalf("children of root = %v", paths)
	}
	if _, ok := reg.Find("/a/b"); ok {
		t.Fatal("/a/b survived its parent's removal")
	}
	if err := reg.Add("/a", "", "k", nil); err != nil {
		t.Fatalf("path not reusable after Remove: %v", err)
	}
}

func TestNode_JSONShape(t *testing.T) {
	reg := NewRegistry()
	reg.now = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	_ = reg.Add("/host", "", "host", mailbox.NewQuota(5, 0))
	reg.SetState("/host", Running)
	_ = reg.Add("/host/peers", "/host", "supervisor", nil)
	reg.Failed("/host/peers", "oops", "")
	b, err := json.Marshal(reg.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}
	if got := keys(generic); !slices.Equal(got, []string{"children", "kind", "mailbox", "path", "restarts", "state"}) {
		t.Fatalf("root keys = %v", got)
	}
	host := generic["children"].([]any)[0].(map[string]any)
	if host["state"] != "running" || host["path"] != "/host" {
		t.Fatalf("host = %v", host)
	}
	if got := keys(host["mailbox"].(map[string]any)); !slices.Equal(got, []string{"bytes", "depth", "max_bytes", "max_messages"}) {
		t.Fatalf("mailbox keys = %v", got)
	}
	peers := host["children"].([]any)[0].(map[string]any)
	if got := keys(peers); !slices.Equal(got, []string{"children", "kind", "last_failure", "mailbox", "path", "restarts", "state"}) {
		t.Fatalf("peers keys = %v", got)
	}
	if peers["state"] != "starting" || peers["children"] == nil {
		t.Fatalf("peers = %v", peers)
	}
	if lf := peers["last_failure"].(map[string]any); lf["reason"] != "oops" || lf["at"] != "2025-01-02T03:04:05Z" {
		t.Fatalf("last_failure = %v", lf)
	}
	// Round trip.
	var back Node
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := reg.Snapshot()
	clearParents(&want)
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip:\n%+v\n%+v", back, want)
	}
}

func clearParents(n *Node) {
	n.Parent = ""
	for i := range n.Children {
		clearParents(&n.Children[i])
	}
}

func TestFormat(t *testing.T) {
	reg := NewRegistry()
	q := mailbox.NewQuota(100, 4096)
	_ = reg.Add("/host", "", "host", nil)
	reg.SetState("/host", Running)
	_ = reg.Add("/host/peers", "/host", "supervisor", q)
	reg.Restarted("/host/peers")
	_ = q.Admit(12)
	var buf bytes.Buffer
	if err := Format(&buf, reg.Snapshot()); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"/ system running restarts=0 mailbox=0/inf bytes=0/inf",
		"  /host host running restarts=0 mailbox=0/inf bytes=0/inf",
		"    /host/peers supervisor starting restarts=1 mailbox=1/100 bytes=12/4096",
		"",
	}, "\n")
	if buf.String() != want {
		t.Fatalf("Format:\n%s\nwant:\n%s", buf.String(), want)
	}
	if reg.Snapshot().String() != want {
		t.Fatal("String differs from Format")
	}
}

func TestState_Text(t *testing.T) {
	for _, s := range []State{Starting, Running, Restarting, Stopping, Stopped} {
		b, err := s.MarshalText()
		if err != nil || string(b) != s.String() || strings.ToLower(string(b)) != string(b) {
			t.Fatalf("%v: %q %v", s, b, err)
		}
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Fatalf("round trip %v: %v %v", s, back, err)
		}
	}
	if _, err := State(0).MarshalText(); err == nil {
		t.Fatal("zero state marshalled")
	}
	if OneForOne.String() != "one_for_one" || AllForOne.String() != "all_for_one" {
		t.Fatal("kind strings")
	}
}

func TestPanicReasonRecorded(t *testing.T) {
	reg := NewRegistry()
	_ = reg.Add("/x", "", "k", nil)
	reg.Failed("/x", &mailbox.Panic{Value: "bad", Stack: []byte("stack!")}, "")
	n, _ := reg.Find("/x")
	if n.LastFailure.Reason != "bad" || n.LastFailure.Stack != "stack!" {
		t.Fatalf("failure = %+v", n.LastFailure)
	}
}
