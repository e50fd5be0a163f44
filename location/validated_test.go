package location

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// unreachable is a backend every method of which fails the test: only
// closedNow answers. A call validated refuses must never get here.
type unreachable struct {
	backend // nil: any method but closedNow panics
	closed  bool
}

func (u unreachable) closedNow() bool { return u.closed }

// storeCalls returns a call of every method of the validated Store, by
// name: with valid arguments, or with bad ones (each call's are refused).
func storeCalls(v validated, ctx context.Context, bad bool) map[string]func() error {
	mesh, rid, ch, kind, id, name, ttl := "m", "n", "c", "room", "1", "r", time.Second
	d := Descriptor{Mesh: mesh, RID: rid, Generation: 1, Revision: 1, ObjectRole: RoleClient}
	p := Publisher{Channel: ch, RID: rid, Generation: 1, Endpoint: "tcp://127.0.0.1:1"}
	l := SpotLease{Mesh: mesh, RID: rid, Generation: 1}
	o := Ownership{Mesh: mesh, Kind: kind, ID: id, OwnerRID: rid, OwnerGeneration: 1, Epoch: 1}
	expect := Ownership{Mesh: mesh, Kind: kind, ID: id}
	rem := Reminder{Name: name, Due: time.UnixMilli(1)}
	part, limit := 0, 1
	if bad {
		mesh, rid, ch, kind, id, name, ttl = "{m}", "", "", "a:b", "", "", 0
		d.Generation, p.Channel, l.Generation, o.Epoch, rem.Name = 0, "", 0, 0, ""
		expect.Epoch = 5
		part, limit = -1, 0
	}
	e := DueReminder{Kind: kind, ID: id, Name: name, Seq: 1}
	return map[string]func() error{
		"PutDescriptor":    func() error { return v.PutDescriptor(ctx, d, ttl) },
		"RenewDescriptor":  func() error { return v.RenewDescriptor(ctx, mesh, rid, 1, ttl) },
		"DeleteDescriptor": func() error { return v.DeleteDescriptor(ctx, mesh, rid, 1) },
		"ListDescriptors":  func() error { _, err := v.ListDescriptors(ctx, mesh); return err },
		"GetDescriptor":    func() error { _, err := v.GetDescriptor(ctx, mesh, rid); return err },
		"Watch":            func() error { _, err := v.Watch(ctx, mesh); return err },
		"DescriptorRevision": func() error {
			_, err := v.DescriptorRevision(ctx, mesh)
			return err
		},
		"DescriptorChanges": func() error {
			_, err := v.DescriptorChanges(ctx, mesh, MeshRevision{})
			return err
		},
		"ExpireDescriptors": func() error { _, _, err := v.ExpireDescriptors(ctx, mesh); return err },
		"PutPublisher":      func() error { return v.PutPublisher(ctx, p, ttl) },
		"ListPublishers":    func() error { _, err := v.ListPublishers(ctx, ch); return err },
		"DeletePublisher":   func() error { return v.DeletePublisher(ctx, ch, rid, 1) },
		"CreateSpotLease":   func() error { return v.CreateSpotLease(ctx, l, ttl) },
		"RenewSpotLease":    func() error { return v.RenewSpotLease(ctx, l, ttl) },
		"DeleteSpotLease":   func() error { return v.DeleteSpotLease(ctx, l) },
		"CheckSpotLease":    func() error { _, err := v.CheckSpotLease(ctx, l, ttl); return err },
		"SpotLeaseLive":     func() error { _, err := v.SpotLeaseLive(ctx, l); return err },
		"SpotRecord":        func() error { _, err := v.SpotRecord(ctx, mesh, kind, id); return err },
		"ClaimSpot":         func() error { _, err := v.ClaimSpot(ctx, expect, o); return err },
		"ClaimSpotIn":       func() error { _, _, err := v.ClaimSpotIn(ctx, expect, o); return err },
		"SpotIncarnation":   func() error { _, err := v.SpotIncarnation(ctx, mesh, kind, id); return err },
		"ReleaseSpot":       func() error { return v.ReleaseSpot(ctx, o) },
		"TransferSpot":      func() error { _, err := v.TransferSpot(ctx, o, rid, 1); return err },
		"PutSpotState":      func() error { return v.PutSpotState(ctx, o, SpotState{Epoch: o.Epoch}) },
		"GetSpotState":      func() error { _, err := v.GetSpotState(ctx, mesh, kind, id); return err },
		"SpotStateEpoch":    func() error { _, err := v.SpotStateEpoch(ctx, mesh, kind, id); return err },
		"SpotRecordAndStateEpoch": func() error {
			_, _, err := v.SpotRecordAndStateEpoch(ctx, mesh, kind, id)
			return err
		},
		"ClaimSpotWithState": func() error {
			_, err := v.ClaimSpotWithState(ctx, expect, o)
			return err
		},
		"PutReminder":    func() error { _, err := v.PutReminder(ctx, o, rem); return err },
		"DeleteReminder": func() error { _, err := v.DeleteReminder(ctx, o, name); return err },
		"ListReminders":  func() error { _, err := v.ListReminders(ctx, mesh, kind, id); return err },
		"GetReminder":    func() error { _, err := v.GetReminder(ctx, mesh, kind, id, name); return err },
		"AdvanceReminder": func() error {
			return v.AdvanceReminder(ctx, o, name, 1, time.UnixMilli(1), time.UnixMilli(2))
		},
		"DueReminders": func() error {
			_, err := v.DueReminders(ctx, mesh, kind, part, limit, time.UnixMilli(1))
			return err
		},
		"FixReminderIndex": func() error { return v.FixReminderIndex(ctx, mesh, e, time.Time{}) },
	}
}

// call runs f and turns a call that reached the unreachable backend (a
// nil-interface panic) into an error.
func call(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reached the implementation: %v", r)
		}
	}()
	return f()
}

// The validating wrapper covers every Store method (those of Store,
// SpotReminders, SpotClaimReader and SpotStateClaimer): the table names
// each.
func TestValidated_CoversEveryMethod(t *testing.T) {
	calls := storeCalls(validated{}, t.Context(), false)
	for _, iface := range []any{(*Store)(nil), (*SpotReminders)(nil), (*SpotClaimReader)(nil), (*SpotStateClaimer)(nil)} {
		for _, m := range methodNames(iface) {
			if _, ok := calls[m]; !ok && m != "Close" {
				t.Errorf("%s: not in the wrapper's test table", m)
			}
		}
	}
}

// Bad input is refused with ErrInvalid (GetDescriptor with a RID no
// descriptor can have: ErrNotFound) before any implementation runs.
func TestValidated_BadInputReachesNoImplementation(t *testing.T) {
	v := validated{b: unreachable{}}
	for name, f := range storeCalls(v, t.Context(), true) {
		err := call(f)
		want := ErrInvalid
		if name == "GetDescriptor" {
			want = ErrNotFound
			v2 := validated{b: unreachable{}}
			err = call(func() error { _, err := v2.GetDescriptor(t.Context(), "m", ""); return err })
		}
		if !errors.Is(err, want) {
			t.Errorf("%s with bad input: %v, want %v", name, err, want)
		}
	}
}

// With valid input, an ended ctx and then a closed store are refused the
// same way, in that order, before any implementation runs.
func TestValidated_EndedContextAndClosedStoreReachNoImplementation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, f := range storeCalls(validated{b: unreachable{closed: true}}, ctx, false) {
		if err := call(f); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended ctx: %v, want context.Canceled", name, err)
		}
	}
	for name, f := range storeCalls(validated{b: unreachable{closed: true}}, t.Context(), false) {
		if err := call(f); !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed store: %v, want ErrClosed", name, err)
		}
	}
	// The valid input does reach the implementation of an open store.
	for name, f := range storeCalls(validated{b: unreachable{}}, t.Context(), false) {
		if err := call(f); err == nil || errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) {
			t.Errorf("%s with valid input on an open store: %v, want it to reach the implementation", name, err)
		}
	}
}

func methodNames(ifacePtr any) []string {
	t := reflect.TypeOf(ifacePtr).Elem()
	out := make([]string, t.NumMethod())
	for i := range out {
		out[i] = t.Method(i).Name
	}
	return out
}
