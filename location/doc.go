// Package location is the Location Store: where MeshNode
// descriptors, classic fanout publisher descriptors and Spot ownership
// records live.
//
// It owns the Store interface and two implementations:
//
//   - Redis (NewRedis, rueidis against a real redis-server, standalone or
//     Cluster): required by automatic topology and distributed Spots, and
//     always configured explicitly (ParseRedisURL("redis://HOST:PORT/DB"),
//     or rediss:// for TLS; see "Connecting securely").
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
// # Connecting securely
//
// RedisConfig.TLS (a *tls.Config; nil = plain TCP) makes every connection
// TLS; Go callers build it themselves, ParseRedisURL builds it from a
// rediss:// URL:
//
//	rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=FILE][&cert=FILE&key=FILE][&servername=NAME]
//
//	ca          PEM CA bundle the server certificate must chain to
//	            (default: the system roots)
//	cert, key   PEM client certificate and key, both or neither, for a server
//	            with tls-auth-clients yes (mutual TLS)
//	servername  name verified in the server certificate (default HOST)
//
// The server certificate is always verified (TLS 1.2 or later); there is
// no parameter to skip verification, and a Go TLS config with
// InsecureSkipVerify is refused unless it sets VerifyConnection or
// VerifyPeerCertificate. Unknown or repeated parameters, cert without key,
// unreadable files and files without PEM data are refused with ErrInvalid
// when the URL is parsed. USER and PASSWORD are sent with AUTH (a Redis 6+
// ACL user, or PASSWORD alone for requirepass); over redis:// they travel
// in clear. A failed first contact says why: an untrusted server
// certificate (the error wraps *tls.CertificateVerificationError), a
// server that wants a client certificate, a plaintext client on a TLS port
// ("use rediss://"), or a TLS client on a plain port (no handshake within
// DialTimeout). In a Cluster every node is dialled with the same config; an
// empty ServerName is taken from each node's address, so node certificates
// must name the addresses the cluster announces.
//
// # Records read back
//
// The store trusts nothing it reads from Redis: anyone who can write to the
// server can write any bytes under these keys. Every descriptor, publisher
// and Spot record read back is decoded by a bounded decoder (declared
// lengths are checked against the bytes present before anything is
// allocated; unknown fields of a newer writer are skipped when at most 4
// levels deep) and validated: the same rules as a write, the size limits
// below, agreement with the key (mesh or channel, RID) and with the gen and
// rev fields the scripts fence on, and for Spot records an owner RID of at
// most 256 bytes, a generation in canonical decimal and an epoch in
// 1..999999999999999 (exact in a Lua double, so an increment inside a
// script never rounds). ListDescriptors and ListPublishers skip a record
// that fails; GetDescriptor, Owner and Claim return ErrCorrupt for the
// record asked about (a Claim over a corrupt epoch changes nothing), and
// Transfer and Release of a corrupt record fail with ErrFenced, since it
// cannot equal the valid record they name. Each failure counts in Redis.Stats().CorruptRecords and is
// logged through RedisConfig.Logger, at warning level the first time per
// key. The scripts cut long values before replying and tolerate keys of the
// wrong type, so a hostile record can neither crash a reader nor make a
// reply unbounded. What validation cannot catch is a well-formed forgery:
// a writer with access to Redis can publish a valid descriptor for an
// endpoint it controls, delete records or claim Spots. Keep strangers out
// of Redis (TLS, ACL, network), and rely on the mesh link's authentication
// to refuse an impostor endpoint.
//
// Size limits, enforced on write (ErrInvalid) and on read (ErrCorrupt):
// mesh names, RIDs, fanout channels, Server channel names and Spot kinds at
// most 256 bytes; endpoints and security identities at most 1024 bytes; at
// most 1024 Servers per descriptor, each weight 0..10000; an encoded
// record at most 512 KiB.
//
// # Boundaries
//
// This package does no discovery, placement or liveness decisions; it
// stores and returns records. It must not import routemesh, spot, actors or
// any transport, and holds no package-level mutable state.
package location
