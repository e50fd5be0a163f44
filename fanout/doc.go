// Package fanout is classic fanout (SPEC §12, reference 004 §12): a
// separate PUB/SUB feature for broadcasting topic messages from publishers
// to subscribers.
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
// not import routemesh, spot or actors. Publishers never connect to each
// other; subscribers never listen and never connect to each other.
package fanout
