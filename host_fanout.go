package zlink

import (
	"fmt"
	"maps"
	"slices"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/fanout"
)

// fanoutSupervisor returns the fanout:<channel> supervisor under the host
// actor, spawning it on first use (sups holds the ones spawned so far).
//
// It supervises the channel's publisher and subscriber actors with
// fanout.DefaultSupervision: a failed child is restarted (rebuilt whole)
// with backoff; a child that cannot be rebuilt stops for good; past the
// restart limit the failure escalates to the host, whose restart of
// fanout:<channel> stops both children for good. Either way the child's
// Err reports it, its reason shows in this node's info, and Host.Health
// fails.
func (h *Host) fanoutSupervisor(sups map[string]*actors.Ref, channel string) (*actors.Ref, error) {
	if ref := sups[channel]; ref != nil {
		return ref, nil
	}
	ref, err := h.sys.Spawn(actors.Spec{
		Name: "fanout:" + channel, Kind: "fanout", Parent: h.root, Supervisor: fanout.DefaultSupervision(),
		MaxMessages: 8, // lifecycle and its children's spawn requests only
		Producer:    func() actors.Actor { return fanoutSupervisorActor{} },
	})
	if err != nil {
		return nil, fmt.Errorf("zlink: fanout %s: spawn supervisor: %w", channel, err)
	}
	sups[channel] = ref
	return ref, nil
}

// fanoutSupervisorActor only supervises: its children are spawned by the
// fanout package and rebuild themselves on restart.
type fanoutSupervisorActor struct{}

var _ actors.Actor = fanoutSupervisorActor{}

func (fanoutSupervisorActor) Receive(*actors.Context) {}

// fanoutHealth lists the fanout publishers and subscribers that failed for
// good, by channel.
func (h *Host) fanoutHealth() []fanoutHealth {
	var out []fanoutHealth
	for _, ch := range slices.Sorted(maps.Keys(h.publishers)) {
		if err := h.publishers[ch].Err(); err != nil {
			out = append(out, fanoutHealth{Channel: ch, Role: "publisher", Err: err})
		}
	}
	for _, ch := range slices.Sorted(maps.Keys(h.subscribers)) {
		if err := h.subscribers[ch].Err(); err != nil {
			out = append(out, fanoutHealth{Channel: ch, Role: "subscriber", Err: err})
		}
	}
	return out
}
