// Package location is the Location Store: where MeshNode
// descriptors, classic fanout publisher descriptors and Spot ownership
// records live.
//
// It owns the Store interface and two implementations:
//
//   - Redis (NewRedis, rueidis against a real redis-server, standalone or
//     Cluster): required by automatic topology and distributed Spots, and
//     always configured explicitly (ParseRedisURL("redis://HOST:PORT/DB")).
//   - Memory (NewMemory): an embedded store serving several MeshNodes inside
//     ONE process (demo, single-process deployments, tests). It is never
//     shared with another process. Its clock is injectable (WithClock).
//
// Both pass the conformance suite in location/locationtest.
//
// # Semantics
//
// Descriptors and publishers live under a TTL lease renewed by their owner
// (PutDescriptor again, or RenewDescriptor). An expired descriptor means that
// lifecycle is gone; expiry removes it from discovery but does not replace
// the liveness confirmation that reconnect and fencing rules require.
// Only the owner writes its records; a generation mismatch makes Renew and
// Delete fail with ErrNotFound, and a lower revision of the same generation
// makes PutDescriptor fail with ErrFenced.
//
// Spot ownership is claimed atomically and is valid only while the owner's
// descriptor (same mesh, RID, generation) lives, so a dead node's Spots are
// claimable without per-Spot lease traffic. Every change of owner increases
// the fencing epoch, also across Release (the record keeps its epoch with no
// owner), so epochs of one Spot never repeat.
//
// Watch pushes change hints; consumers re-read and also rely on the store's
// polling (every PollInterval) to see expiries and recover lost pushes.
// Watch channels are bounded; a slow consumer gets events coalesced per RID
// and never blocks a writer.
//
// # Redis keys
//
// Every key of a mesh carries the hash tag {mesh:<MeshName>} and every key
// of a fanout channel {fanout:<Channel>}, so each Lua script touches one
// Cluster slot. <prefix> is RedisConfig.Prefix (default "zlink"). MeshName
// and fanout channel must not contain '{' or '}'; Spot kinds must not
// contain ':'.
//
//	<prefix>:{mesh:<M>}:node:<RID>          HASH gen, rev, d (msgpack descriptor); PEXPIRE = descriptor TTL
//	<prefix>:{mesh:<M>}:nodes               SET of RIDs; members pruned lazily when their node key expired;
//	                                        PEXPIRE extended to the longest lease put or renewed
//	<prefix>:{mesh:<M>}:events              pub/sub channel; payload "p <RID>" (put/changed) or "d <RID>" (deleted),
//	                                        published by the writing script; no event for a renewal or an expiry
//	<prefix>:{mesh:<M>}:spot:<kind>:<id>    HASH owner, gen, epoch; no TTL (validity = owner's node key with that gen);
//	                                        after Release owner and gen are "" and epoch stays
//	<prefix>:{fanout:<C>}:pub:<RID>         HASH gen, d (msgpack publisher); PEXPIRE = publisher TTL
//	<prefix>:{fanout:<C>}:pubs              SET of publisher RIDs; pruned lazily like nodes
//
// Compare-and-set operations (put with revision check, renew, delete, list
// with pruning, claim, transfer, release, owner) are Lua scripts run with
// EVALSHA (EVAL after a Redis restart). Generations and epochs are stored
// as decimal strings and compared as strings, so uint64 values keep full
// precision. Spot records of released Spots stay (a few dozen bytes each) so
// that epochs never go back.
//
// Every Redis call is bounded: by the caller's ctx deadline, or by
// RedisConfig.OpTimeout when ctx has none. While Redis is unreachable calls
// fail with an error; the client reconnects on its own, Watch resubscribes
// and re-lists.
//
// # Boundaries
//
// This package does no discovery, placement or liveness decisions; it
// stores and returns records. It must not import routemesh, spot, actors or
// any transport, and holds no package-level mutable state.
package location
