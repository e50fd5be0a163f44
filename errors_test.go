package zlink_test

import (
	"context"
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// TestErrors_ReexportsAreTheSourceValues: every error zlink re-exports is
// the very value its defining package returns (and every older alias of it
// is that value too), so errors.Is works whichever name a caller uses.
func TestErrors_ReexportsAreTheSourceValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reexp   error
		sources []error // the definition first, then the aliases
	}{
		{"NoTarget", zlink.ErrNoTarget, []error{zerr.ErrNoTarget, wire.ErrNoTarget}},
		{"Timeout", zlink.ErrTimeout, []error{zerr.ErrTimeout, wire.ErrTimeout, actors.ErrTimeout}},
		{"MailboxFull", zlink.ErrMailboxFull, []error{zerr.ErrMailboxFull, wire.ErrMailboxFull, mailbox.ErrMailboxFull}},
		{"Busy", zlink.ErrBusy, []error{zerr.ErrBusy, wire.ErrBusy}},
		{"PeerLost", zlink.ErrPeerLost, []error{zerr.ErrPeerLost, wire.ErrPeerLost}},
		{"TooLarge", zlink.ErrTooLarge, []error{zerr.ErrTooLarge, wire.ErrTooLarge}},
		{"Handler", zlink.ErrHandler, []error{zerr.ErrHandler, wire.ErrHandler}},
		{"Cancelled", zlink.ErrCancelled, []error{zerr.ErrCancelled, wire.ErrCancelled}},
		{"ShuttingDown", zlink.ErrShuttingDown, []error{zerr.ErrShuttingDown, wire.ErrShuttingDown}},
		{"UnknownPacket", zlink.ErrUnknownPacket, []error{zerr.ErrUnknownPacket, wire.ErrUnknownPacket}},
		{"BadPayload", zlink.ErrBadPayload, []error{zerr.ErrBadPayload, wire.ErrBadPayload}},
		{"Stopped", zlink.ErrStopped, []error{zerr.ErrStopped, actors.ErrStopped}},

		{"NoChannelRole", zlink.ErrNoChannelRole, []error{routemesh.ErrNoChannelRole}},
		{"UnknownChannel", zlink.ErrUnknownChannel, []error{routemesh.ErrUnknownChannel}},
		{"DrainTimeout", zlink.ErrDrainTimeout, []error{routemesh.ErrDrainTimeout}},
		{"NodeFailed", zlink.ErrNodeFailed, []error{routemesh.ErrNodeFailed}},
		{"RIDInUse", zlink.ErrRIDInUse, []error{routemesh.ErrRIDInUse}},

		{"Config", zlink.ErrConfig, []error{routemesh.ErrConfig}},
		{"DuplicateMesh", zlink.ErrDuplicateMesh, []error{routemesh.ErrDuplicateMesh}},
		{"DuplicateChannel", zlink.ErrDuplicateChannel, []error{routemesh.ErrDuplicateChannel}},
		{"TopologyConflict", zlink.ErrTopologyConflict, []error{routemesh.ErrTopologyConflict}},
		{"WeightRange", zlink.ErrWeightRange, []error{routemesh.ErrWeightRange}},
		{"DirectOnObjectRole", zlink.ErrDirectOnObjectRole, []error{routemesh.ErrDirectOnObjectRole}},
		{"RIDConflict", zlink.ErrRIDConflict, []error{routemesh.ErrRIDConflict}},
		{"NeedsLocationStore", zlink.ErrNeedsLocationStore, []error{zerr.ErrNeedsLocationStore, routemesh.ErrNeedsLocationStore, fanout.ErrNeedsLocationStore}},
		{"Invalid", zlink.ErrInvalid, []error{routemesh.ErrInvalid}},

		{"FanoutSourceConflict", zlink.ErrFanoutSourceConflict, []error{fanout.ErrSourceConflict, routemesh.ErrFanoutSourceConflict}},
		{"FanoutNoSource", zlink.ErrFanoutNoSource, []error{fanout.ErrNoSource}},
		{"FanoutInvalidConfig", zlink.ErrFanoutInvalidConfig, []error{fanout.ErrInvalidConfig}},
		{"FanoutReservedTopic", zlink.ErrFanoutReservedTopic, []error{fanout.ErrReservedTopic}},
		{"FanoutClosed", zlink.ErrFanoutClosed, []error{fanout.ErrClosed}},

		{"Cycle", zlink.ErrCycle, []error{zerr.ErrCycle, spot.ErrCycle}},
		{"Fenced", zlink.ErrFenced, []error{zerr.ErrFenced, spot.ErrFenced}},
		{"OutcomeUnknown", zlink.ErrOutcomeUnknown, []error{zerr.ErrOutcomeUnknown, spot.ErrOutcomeUnknown}},
		{"Role", zlink.ErrRole, []error{zerr.ErrRole, spot.ErrRole}},
		{"NotEnabled", zlink.ErrNotEnabled, []error{zerr.ErrNotEnabled, spot.ErrNotEnabled}},
		{"UnknownKind", zlink.ErrUnknownKind, []error{zerr.ErrUnknownKind, spot.ErrUnknownKind}},
		{"NoOwner", zlink.ErrNoOwner, []error{zerr.ErrNoOwner, spot.ErrNotFound}},
		{"SpotConfig", zlink.ErrSpotConfig, []error{zerr.ErrSpotConfig, spot.ErrConfig}},
	} {
		if tc.reexp == nil {
			t.Errorf("%s: nil re-export", tc.name)
		}
		for i, src := range tc.sources {
			if tc.reexp != src {
				t.Errorf("%s: zlink value %p (%v) is not source #%d %p (%v)", tc.name, tc.reexp, tc.reexp, i, src, src)
			}
		}
	}
}

// TestErrors_RemoteResultMatchesReexport: a result rebuilt from a wire code
// matches the zlink name a user writes.
func TestErrors_RemoteResultMatchesReexport(t *testing.T) {
	for _, want := range []error{zlink.ErrNoTarget, zlink.ErrTimeout, zlink.ErrMailboxFull, zlink.ErrBusy,
		zlink.ErrPeerLost, zlink.ErrTooLarge, zlink.ErrHandler, zlink.ErrCancelled, zlink.ErrShuttingDown,
		zlink.ErrUnknownPacket, zlink.ErrBadPayload} {
		code := wire.CodeOf(want)
		if got := wire.ErrorOf(code, "remote"); !errors.Is(got, want) {
			t.Errorf("%v: code %v rebuilds %v, which does not match", want, code, got)
		}
	}
}

// TestErrors_FanoutRulesMatchFromBothEntryPoints: the fanout source rules
// have one definition; a subscriber refused by fanout.StartSubscriber
// directly and the same subscriber refused by zlink.Start match the same
// sentinel (and through zlink.Start also ErrConfig).
func TestErrors_FanoutRulesMatchFromBothEntryPoints(t *testing.T) {
	store := location.NewMemory()
	t.Cleanup(func() { _ = store.Close() })
	eps := []string{"tcp://127.0.0.1:1"}
	for name, tc := range map[string]struct {
		direct fanout.SubscriberConfig // given to fanout.StartSubscriber
		store  location.Store          // Options.SetLocationStore for zlink.Start
		want   error
	}{
		"automatic and manual": {fanout.SubscriberConfig{Channel: "news", Automatic: true, Store: store, Endpoints: eps}, store, zlink.ErrFanoutSourceConflict},
		"no source":            {fanout.SubscriberConfig{Channel: "news"}, nil, zlink.ErrFanoutNoSource},
		"automatic, no store":  {fanout.SubscriberConfig{Channel: "news", Automatic: true}, nil, zlink.ErrNeedsLocationStore},
		"empty channel":        {fanout.SubscriberConfig{Endpoints: eps}, nil, zlink.ErrFanoutInvalidConfig},
		"brace in channel":     {fanout.SubscriberConfig{Channel: "a{b}", Endpoints: eps}, nil, zlink.ErrFanoutInvalidConfig},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := fanout.StartSubscriber(context.Background(), tc.direct)
			if err == nil {
				_ = s.Close()
				t.Fatal("fanout.StartSubscriber accepted the configuration")
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("fanout.StartSubscriber: %v, want %v", err, tc.want)
			}

			o := zlink.NewOptions().AddFanoutSubscriber(tc.direct)
			if tc.store != nil {
				o.SetLocationStore(tc.store)
			}
			h, err := zlink.Start(context.Background(), o)
			if err == nil {
				_ = h.Stop(context.Background())
				t.Fatal("zlink.Start accepted the configuration")
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, zlink.ErrConfig) {
				t.Errorf("zlink.Start: %v, want %v and ErrConfig", err, tc.want)
			}
			var ce *routemesh.ConfigError
			if !errors.As(err, &ce) || ce.Channel != tc.direct.Channel {
				t.Errorf("zlink.Start: %v does not name channel %q", err, tc.direct.Channel)
			}
		})
	}
	// zlink.Start applies the same rule before anything runs.
	o := zlink.NewOptions().SetLocationStore(store)
	o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Automatic: true, Endpoints: eps})
	if h, err := zlink.Start(context.Background(), o); err == nil {
		_ = h.Stop(context.Background())
		t.Fatal("a subscriber with both sources started")
	} else if !errors.Is(err, fanout.ErrSourceConflict) {
		t.Fatalf("a subscriber with both sources: %v, want fanout.ErrSourceConflict", err)
	}
}

// TestErrors_FanoutSettingRefusedAsConfig: a fanout setting only
// fanout.StartPublisher checks (not the registration rules) still ends
// zlink.Start with a refusal matching ErrConfig and its fanout sentinel.
func TestErrors_FanoutSettingRefusedAsConfig(t *testing.T) {
	o := zlink.NewOptions().AddFanoutPublisher(fanout.PublisherConfig{Channel: "news", Listen: "ipc:///tmp/x"})
	h, err := zlink.Start(context.Background(), o)
	if err == nil {
		_ = h.Stop(context.Background())
		t.Fatal("zlink.Start accepted an ipc:// listen endpoint")
	}
	if !errors.Is(err, zlink.ErrConfig) || !errors.Is(err, zlink.ErrFanoutInvalidConfig) {
		t.Fatalf("zlink.Start: %v, want ErrConfig and ErrFanoutInvalidConfig", err)
	}
}

// TestErrors_SpotRefusalsAreConfigRefusals: every startup refusal of the
// Spot runtime (a bad kind, a bad setting, a mesh name it cannot use)
// matches zlink.ErrConfig and spot.ErrConfig, like every other refusal of
// Start.
func TestErrors_SpotRefusalsAreConfigRefusals(t *testing.T) {
	type st struct{ N int }
	for name, setup := range map[string]func(o *zlink.Options){
		"mesh name with ':'": func(o *zlink.Options) {
			b := o.AddRouteMesh("a:b").SetRoutingIDPrefix("os").SetObjectRole(routemesh.ObjectServer)
			spot.Enable(b, spot.NewKind("k", func(string) *st { return &st{} }))
		},
		"kind on an Object Client": func(o *zlink.Options) {
			b := o.AddRouteMesh("m").SetRoutingIDPrefix("oc").SetObjectRole(routemesh.ObjectClient)
			spot.Enable(b, spot.NewKind("k", func(string) *st { return &st{} }))
		},
		"idle timeout below 10ms": func(o *zlink.Options) {
			b := o.AddRouteMesh("m").SetRoutingIDPrefix("os").SetObjectRole(routemesh.ObjectServer)
			spot.Enable(b, spot.NewKind("k", func(string) *st { return &st{} }).SetIdleTimeout(time.Millisecond))
		},
		"store timeout": func(o *zlink.Options) {
			b := o.AddRouteMesh("m").SetRoutingIDPrefix("os").SetObjectRole(routemesh.ObjectServer)
			spot.EnableWith(b, spot.Config{StoreTimeout: -1})
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := location.NewMemory()
			t.Cleanup(func() { _ = store.Close() })
			o := zlink.NewOptions().SetLocationStore(store)
			setup(o)
			h, err := zlink.Start(context.Background(), o)
			if err == nil {
				_ = h.Stop(context.Background())
				t.Fatal("zlink.Start accepted it")
			}
			if !errors.Is(err, zlink.ErrConfig) {
				t.Fatalf("zlink.Start: %v; want it to match zlink.ErrConfig", err)
			}
			meshRefusesFirst := name == "mesh name with ':'" && errors.Is(err, zlink.ErrInvalid)
			if !errors.Is(err, spot.ErrConfig) && !meshRefusesFirst {
				t.Fatalf("zlink.Start: %v; want spot.ErrConfig (or, for a name the mesh refuses first, ErrInvalid)", err)
			}
		})
	}
}
