package routemesh

import (
	"testing"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

func TestPlanDiscovery(t *testing.T) {
	local := admission.Identity{Mesh: "m", RID: "b", Generation: 1, ObjectRole: admission.RoleClient}
	d := func(rid string, role location.ObjectRole, servers map[string]uint16) location.Descriptor {
		return location.Descriptor{Mesh: "m", RID: rid, Generation: 9, Revision: 1, Endpoint: "tcp://h:1", ObjectRole: role, Servers: servers, Discovers: true}
	}
	manual := d("0", location.RoleNone, nil)
	manual.Discovers = false
	descs := []location.Descriptor{
		d("a", location.RoleNone, nil),   // smaller: await
		manual,                           // smaller but manual (never dials): dial
		d("c", location.RoleServer, nil), // larger: dial
		d("d", location.RoleClient, nil), // excluded pair
		d("e", location.RoleClient, map[string]uint16{"x": 0}),          // weight-0 membership: needed
		d("b", location.RoleServer, nil),                                // self
		{Mesh: "other", RID: "f", Generation: 1, Endpoint: "tcp://h:2"}, // other mesh
	}
	got := planDiscovery(local, descs)
	want := map[string]wantKind{"a": wantAwait, "0": wantDial, "c": wantDial, "d": wantExcluded, "e": wantDial}
	if len(got) != len(want) {
		t.Fatalf("plan %+v", got)
	}
	for rid, k := range want {
		if got[rid].kind != k {
			t.Errorf("%s: %v, want %v", rid, got[rid].kind, k)
		}
	}
	// Exactly one side of every pair dials.
	for _, x := range []string{"a", "b", "c"} {
		for _, y := range []string{"a", "b", "c"} {
			if x != y && admission.Initiator(x, y) == admission.Initiator(y, x) {
				t.Fatalf("%s/%s: both or neither dial", x, y)
			}
		}
	}
}

func TestDiffDiscovery(t *testing.T) {
	applied := map[string]want{
		"a": {kind: wantDial, gen: 1, endpoint: "e1"},
		"b": {kind: wantAwait, gen: 1, endpoint: "e2"},
		"c": {kind: wantDial, gen: 1, endpoint: "e3"},
	}
	wanted := map[string]want{
		"a": {kind: wantDial, gen: 1, endpoint: "e1"}, // unchanged
		"c": {kind: wantDial, gen: 2, endpoint: "e3"}, // new lifecycle
		"d": {kind: wantExcluded, gen: 1, endpoint: "e4"},
	}
	by := map[string]location.Descriptor{"a": {RID: "a"}, "c": {RID: "c"}, "d": {RID: "d"}}
	got := diffDiscovery(applied, wanted, by)
	exp := []struct {
		rid  string
		kind wantKind
	}{{"b", wantRemove}, {"c", wantDial}, {"d", wantExcluded}}
	if len(got) != len(exp) {
		t.Fatalf("diff %+v", got)
	}
	for i, e := range exp {
		if got[i].d.RID != e.rid || got[i].kind != e.kind {
			t.Fatalf("change %d: %s %v, want %s %v", i, got[i].d.RID, got[i].kind, e.rid, e.kind)
		}
	}
}
