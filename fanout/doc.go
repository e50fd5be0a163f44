// Package fanout is classic fanout: a separate PUB/SUB feature for
// broadcasting topic messages from publishers to subscribers.
//
// # What it owns
//
//   - Publisher (StartPublisher): binds one PUB socket and never dials
//     anything. In automatic mode (PublisherConfig.Store set) it publishes one
//     fanout publisher descriptor (location.Publisher: lifecycle RID,
//     generation, actual bound endpoint) under a TTL lease, renews it, and
//     deletes it on Close. It sends a heartbeat on a reserved topic every
//     HeartbeatInterval so an idle publisher is distinguishable from a dead
//     one.
//   - Subscriber (StartSubscriber): one dedicated SUB socket per publisher.
//     Automatic mode reads only the fanout publisher descriptors of its own
//     ChannelName (Store.ListPublishers, polled every PollInterval) and keeps
//     one connection intent per (publisher RID, generation). Manual mode uses
//     only the configured Endpoints, one SUB socket each, and reads nothing
//     from the Location Store. Configuring both fails with ErrSourceConflict;
//     the two sources are never merged and never fall back to each other.
//     Liveness is per publisher: a publisher heard from (message or
//     heartbeat) less than ReceiveTimeout ago is Live, otherwise TimedOut;
//     one publisher's timeout is never applied to another.
//   - The liveness state machine (liveness): pure, driven with explicit
//     times.
//
// Subscribers reconnect on their own (zmq4's automatic reconnect is not
// used): a lost connection closes that publisher's SUB socket and a fresh
// one dials again with backoff. A descriptor that disappears from the store
// stops discovery only: its connection stays until the publisher times out
// (descriptor expiry does not replace liveness), then it is dropped after
// one more ReceiveTimeout.
//
// Messages are [topic, payload] frames. Topics starting with byte 0xFF are
// reserved (the heartbeat topic sorts after every user topic, so a
// subscriber that heard a heartbeat knows the publisher has processed all
// of its subscriptions). Delivery is best effort: PUB drops at its
// high-water mark and a subscriber sees nothing published before its
// subscription reached the publisher.
//
// All sockets use the guarded transport of internal/zguard (handshake and
// write deadlines, frame-size limit).
//
// # Actors and restarts
//
// Each Publisher and Subscriber is a handle to one supervised actor spawned
// through actors.System: with Config.System (and optionally Config.Parent)
// it runs there as child "publisher" or "subscriber" of Parent — a Host
// puts both under /host/fanout:<channel>, supervised with
// DefaultSupervision; without a System the handle starts an internal
// actor system of its own (top-level actor supervised with
// DefaultSupervision) and shuts it down on Close. The public API is the
// same either way.
//
// A restart rebuilds the actor whole. The old incarnation gets
// *actors.Restarting and only releases: it cancels its goroutines and closes
// its sockets without waiting. The new one gets *actors.Started and does
// all the setup:
//
//   - publisher: binds the endpoint bound at startup again (same port, same
//     RID and generation), publishes its descriptor again (automatic) and
//     restarts heartbeats and lease renewal. Subscribers see a lost
//     connection and re-dial. While it restarts, Publish fails with
//     ErrRestarting. If the endpoint cannot be bound again the failure is
//     unrecoverable (supervisor.ErrUnrecoverable): the actor stops for
//     good.
//   - subscriber: rebuilds its publishers from their source (the configured
//     endpoints, or a fresh ListPublishers) and dials each again; Status is
//     empty until it has.
//
// An actor that stops without Close — unrecoverable, or past its
// supervisor's restart limit — leaves the handle failed: Err returns an
// error matching ErrFailed with the last failure's reason, Publish returns
// it, and the reason is set as info ("publisher" or "subscriber") on the
// Parent's node in the tree. Receive never blocks: store I/O and every
// connection run on goroutines tracked per handle (Close waits for all of
// them, across incarnations) that report back by message or under a leaf
// lock.
//
// The registration rules (CheckChannel, CheckSubscriberSource) are defined
// here once: StartPublisher and StartSubscriber apply them, and so does the
// startup validation of zlink.Start, so errors.Is matches the same
// sentinel (ErrSourceConflict, ErrNoSource, ErrInvalidConfig,
// ErrNeedsLocationStore) from both entry points.
//
// # What it must not touch
//
// fanout is independent of RouteMesh membership: it needs no MeshNode, never
// reads or writes MeshNode or ClientServer descriptors, takes no part in
// ChannelName membership or the RouteMesh connection-need decision, and must
// not import routemesh or spot (it uses actors and supervisor only to be
// supervised). Publishers never connect to each other; subscribers never
// listen and never connect to each other.
package fanout
