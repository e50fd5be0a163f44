package location_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// Following a mesh costs Redis the same commands whatever its size (doc.go,
// "Following a mesh"): a renewal, a revision read, a read of the changes
// when one descriptor changed, and a sweep that finds nothing run the same
// commands (counted by the server, those inside scripts included) in a
// mesh of 2 descriptors and in one of 200. A full read is the one that
// grows.
func TestRedis_FollowingCostDoesNotGrowWithMesh(t *testing.T) {
	srv := locationtest.StartRedis(t)
	s := newRedisStore(t, srv, func(c *location.RedisConfig) {
		c.ReplicaAcks = location.ReplicaAcksNever // no INFO of its own
	})
	ctx := t.Context()
	type op struct {
		name string
		run  func(mesh string) error
	}
	var since location.MeshRevision
	ops := []op{
		{"renew", func(mesh string) error { return s.RenewDescriptor(ctx, mesh, "n000", 1, time.Minute) }},
		{"revision", func(mesh string) error { _, err := s.DescriptorRevision(ctx, mesh); return err }},
		{"changes of one", func(mesh string) error {
			d := locationtest.Desc(mesh, "n001", 1, 2)
			if err := s.PutDescriptor(ctx, d, time.Minute); err != nil {
				return err
			}
			ch, err := s.DescriptorChanges(ctx, mesh, since)
			if err == nil && (ch.Full || len(ch.Put) != 1) {
				err = fmt.Errorf("changes %+v, want one put", ch)
			}
			return err
		}},
		{"sweep", func(mesh string) error {
			removed, _, err := s.ExpireDescriptors(ctx, mesh)
			if err == nil && removed != 0 {
				err = fmt.Errorf("swept %d", removed)
			}
			return err
		}},
	}
	cost := func(mesh string, size int) map[string]map[string]uint64 {
		for i := range size {
			if err := s.PutDescriptor(ctx, locationtest.Desc(mesh, fmt.Sprintf("n%03d", i), 1, 1), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		rev, err := s.DescriptorRevision(ctx, mesh)
		if err != nil {
			t.Fatal(err)
		}
		since = rev
		out := map[string]map[string]uint64{}
		for _, o := range ops {
			before := srv.Load(t)
			if err := o.run(mesh); err != nil {
				t.Fatalf("%s in a mesh of %d: %v", o.name, size, err)
			}
			d := srv.Load(t).Sub(before).Calls
			delete(d, "info") // the reads of the load
			delete(d, "ping") // the client's idle checks
			out[o.name] = d
		}
		return out
	}
	cost("warm", 2) // loads the scripts (the first run of each is an EVAL)
	small, large := cost("small", 2), cost("large", 200)
	for _, o := range ops {
		if !maps.Equal(small[o.name], large[o.name]) {
			t.Errorf("%s: %v in a mesh of 2, %v in a mesh of 200", o.name, small[o.name], large[o.name])
		}
	}
	t.Logf("commands: %v", small)
	// The renewal is the script and four commands.
	if n := sum(small["renew"]); n != 5 {
		t.Errorf("a renewal ran %d commands (%v), want 5", n, small["renew"])
	}
	if n := sum(small["revision"]); n != 1 {
		t.Errorf("a revision read ran %d commands (%v), want 1", n, small["revision"])
	}
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, c := range m {
		n += c
	}
	return n
}
