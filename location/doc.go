// Package location is the Location Store: where MeshNode descriptors,
// classic fanout publisher descriptors and the Spot ownership directory
// (Spot leases and Spot ownership records) live.
//
// It owns the Store interface (with SpotDirectory embedded) and two
// implementations:
//
//   - Redis (NewRedis, rueidis against a real redis-server, standalone or
//     Cluster): required by automatic topology and distributed Spots, and
//     always configured explicitly (ParseRedisURL("redis://HOST:PORT/DB"),
//     rediss:// for TLS, see "Connecting securely"; a Cluster is detected,
//     see "Redis Cluster").
//   - Memory (NewMemory): an embedded store serving several MeshNodes inside
//     ONE process (demo, single-process deployments, tests). It is never
//     shared with another process. Its clock is injectable (WithClock); it
//     times descriptor, publisher and Spot leases and tombstones.
//
// Both pass the conformance suite in location/locationtest (Redis as a
// standalone server, over TLS and as a 3-master Cluster).
//
// # One validating wrapper
//
// Memory and Redis share one opening for every Store method (and those of
// SpotReminders, SpotClaimReader and SpotStateClaimer): an unexported
// wrapper, embedded by NewMemory and NewRedis, checks the arguments
// (names, sizes, TTLs, owners,
// epochs: ErrInvalid; a RID no descriptor can have: ErrNotFound), then the
// ctx (its own error) and then Close (ErrClosed), in that order, and only
// then calls the implementation, which trusts its input. A refused call
// reaches no implementation (TestValidated_* in validated_test.go), so a
// new implementation gets the same refusals, with the same sentinels, by
// embedding the wrapper over itself.
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
// # Following a mesh
//
// A mesh's descriptors carry a revision (MeshRevision), the way a cluster
// map does: every descriptor that appears, changes (not a renewal), is
// deleted or expires moves it, and a change log remembers which RID
// changed at which revision. A reader follows the mesh with a view of its
// own: DescriptorChanges from the zero revision reads everything once,
// then DescriptorChanges since the view's revision reads only what
// changed; DescriptorRevision, one small read, tells whether anything did.
// None of the three reads every descriptor, except a Full answer (a new
// reader, one further behind than the log keeps — the last 1024 removals
// — or a store that lost its log, which then starts a new epoch). The
// cost of following a mesh at rest is so the same for every node, however
// many nodes the mesh has.
//
// Expired leases need a sweep: ExpireDescriptors finds them through an
// index of lease ends read by range (on Redis; Memory checks each lease in
// memory) and removes them as deletes, so the revision moves and watches
// get a delete hint. Every Redis watch of a mesh sweeps it now and then —
// each at random about every PollInterval × live descriptors — so that
// the watches of a mesh sweep it about once per PollInterval together (a
// Memory watch sweeps every poll interval: no I/O).
//
// Watch pushes change hints at once (on Redis each push names the revision
// it brought); a poll every PollInterval reads the revision and, when it
// is beyond what the pushes said, what changed, so a lost push is
// recovered. On Redis the poll takes the revision another caller of the
// same store read within the interval instead of reading it again (a
// routemesh node's discovery reads it every DiscoveryPoll). Watch channels
// are bounded; a slow consumer gets events coalesced per RID and never
// blocks a writer.
//
// # The Spot directory
//
// SpotDirectory stores two things, and decides nothing (internal/fence
// plans a claim; docs/spots.md states the rules R1 to R4):
//
//   - A Spot lease per node lifecycle (Mesh, RID, Generation), apart from
//     the descriptor: CreateSpotLease once per generation (NX; ErrExists if
//     there), RenewSpotLease while it exists (XX; ErrNotFound once gone,
//     never re-created), DeleteSpotLease at a clean shutdown. A lease is
//     used once (R1): CheckSpotLease, asked by a claimer about a recorded
//     owner, answers live, or writes a tombstone for that (Mesh, RID,
//     Generation) in the same atomic step and answers gone; while the
//     tombstone lives (its tombTTL, never shortened) the lease can be
//     neither created nor renewed (ErrFenced), so an owner that lost its
//     lease cannot quietly get it back. SpotLeaseLive only reads a lease
//     (no tombstone): for readers such as spot.Owner, never for a claim.
//   - A record per Spot: owner RID, owner generation and the fencing epoch.
//     A record is valid only while its owner's lease lives, but the store
//     does not check that: a claim is several steps, each one call on one
//     key (one Cluster slot): read the record (SpotRecord, from the
//     master), check the recorded owner's lease if another owner is
//     recorded (CheckSpotLease), then compare-and-set (ClaimSpot, on owner
//     RID, generation and epoch, or on "absent"), with a higher epoch. A
//     mismatch answers ErrFenced with the current record, so the claimer
//     plans again (R3). ReleaseSpot and TransferSpot compare all three
//     fields (R4); a release clears the owner and keeps the epoch, a
//     transfer writes epoch + 1, a claim any higher epoch: epochs of one
//     Spot never decrease. Records are never deleted (a few dozen bytes
//     each), so an epoch never repeats.
//
// Beside a Spot's record, SpotReminders (reminders.go; both stores
// implement it, outside the Store interface) keeps the Spot's durable
// reminders, written fenced on the record like state, and a due-time index
// per kind in ReminderParts parts of their own, written after the records
// and reconciled against them by its reader; it decides nothing about
// firing (the spot package does).
//
// The mesh name of a Spot or a Spot lease must not contain ':' (ErrInvalid),
// nor a Spot's kind: their keys name mesh, kind and ID (or mesh and RID)
// separated by ':'.
//
// On Redis, every directory write (lease create, renew, delete, tombstone,
// claim, release, transfer) sent to a master with replicas is followed on
// the same connection by WAIT 1, and counts only if a replica acknowledged
// it within RedisConfig.ReplicaTimeout; otherwise it fails with
// ErrUnconfirmed (the master may have applied it; a failover may lose it).
// RedisConfig.ReplicaAcks decides which masters: by default those seen with
// a replica (INFO replication, re-read every ReplicaRefresh), and from then
// on for the life of the store, also while the replica is away. A
// standalone server without replicas pays nothing. Refusals (ErrExists,
// ErrFenced, ErrNotFound, a live lease) wrote nothing and are answered as
// such.
//
// # Redis keys
//
// Every key of a mesh's descriptors carries the hash tag {mesh:<MeshName>},
// every key of a fanout channel {fanout:<Channel>}, every Spot record its
// own tag {spot:<mesh>:<kind>:<id>} and the Spot lease keys of a node
// {spotlease:<mesh>:<rid>}, so each Lua script touches one Cluster slot
// while the Spots of a mesh spread over all slots. <prefix> is
// RedisConfig.Prefix (default "zlink"). MeshName and fanout channel must not
// contain '{' or '}'.
//
//	<prefix>:{mesh:<M>}:node:<RID>          HASH gen, rev, d (msgpack descriptor); PEXPIRE = descriptor TTL
//	<prefix>:{mesh:<M>}:live                ZSET RID → end of its lease (ms, server clock); written by put and
//	                                        renew; the sweep reads the ended ones by range
//	<prefix>:{mesh:<M>}:changed             ZSET RID → revision of its last change (live RIDs)
//	<prefix>:{mesh:<M>}:gone                ZSET RID → revision of its removal (the newest 1024)
//	<prefix>:{mesh:<M>}:rev                 HASH epoch (16 hex digits, new for a new log), seq (the revision),
//	                                        floor (the newest removal the log forgot)
//	                                        (live, changed, gone, rev: PEXPIRE an hour, or twice the longest
//	                                        lease, set again by a change or sweep once less than half is left)
//	<prefix>:{mesh:<M>}:events              pub/sub channel; payload "p <epoch> <seq> <RID>" (put/changed) or
//	                                        "d <epoch> <seq> <RID>" (deleted or expired), published by the
//	                                        writing script; no event for a renewal
//	<prefix>:{fanout:<C>}:pub:<RID>         HASH gen, d (msgpack publisher); PEXPIRE = publisher TTL
//	<prefix>:{fanout:<C>}:pubs              SET of publisher RIDs; pruned lazily like nodes
//	<prefix>:{spot:<M>:<kind>:<id>}         HASH owner, gen, epoch; no TTL; after a release owner and gen are ""
//	                                        and epoch stays
//	<prefix>:{spot:<M>:<kind>:<id>}:rem     HASH reminder name → "<seq> <due ms> <period ms> <payload>"; no TTL
//	<prefix>:{spot:<M>:<kind>:<id>}:remseq  STRING the Spot's last reminder registration (INCR)
//	<prefix>:{rem:<M>:<kind>:<p>}           ZSET "<seq>:<len(id)>:<id><name>" → due ms: part p (0..ReminderParts-1,
//	                                        FNV-1a of the id) of the kind's due-time index; written after the
//	                                        record, an entry only moves later (ZADD GT); read by ZRANGEBYSCORE
//	<prefix>:{spotlease:<M>:<RID>}:<gen>    STRING "1"; PEXPIRE = Spot lease TTL
//	<prefix>:{spotlease:<M>:<RID>}:tomb:<gen>
//	                                        STRING "1"; PEXPIRE = tombTTL of the check that found the lease gone
//
// Compare-and-set operations (put with revision check, renew, delete,
// sweep, reading the changes, every Spot directory step) are Lua scripts
// run with EVALSHA (EVAL after a Redis restart or failover). A descriptor
// renewal is HGET, PEXPIRE, TIME and ZADD; a sweep that finds nothing,
// TIME, ZRANGEBYSCORE, ZCARD and PTTL; DescriptorRevision one HMGET; a
// read of the changes two range reads plus one HMGET per changed record:
// none grows with the mesh. Connections idle for 5 s are checked with a
// PING. Generations and epochs are
// stored as decimal strings and compared as strings, so uint64 values keep
// full precision; no script computes with them.
//
// # Redis Cluster
//
// NewRedis detects a Cluster from the node it reaches (RedisConfig.Addr, or
// one of RedisConfig.Addrs) and learns the others from it; a Cluster URL
// may name more seed nodes:
//
//	redis://HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3
//
// Each command goes to the master of its key's slot (rueidis follows
// MOVED and ASK; a confirmed write the Cluster redirects is tried again a
// few times). Watch subscribes on any node: a PUBLISH reaches every node of
// a Cluster. DB must be 0.
//
// Every Redis call is bounded: by the caller's ctx deadline, or by
// RedisConfig.OpTimeout when ctx has none. While Redis is unreachable calls
// fail with an error; the client reconnects on its own, Watch resubscribes
// and reads what changed.
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
// most 256 bytes with a generation in canonical decimal (or no owner and an
// empty generation), and an epoch in 1..999999999999999 (exact in a Lua
// double). ListDescriptors and ListPublishers skip a record that fails;
// GetDescriptor, SpotRecord and ClaimSpot return ErrCorrupt for the record
// asked about, ReleaseSpot and TransferSpot an error matching both
// ErrFenced and ErrCorrupt (a corrupt record cannot equal the valid one
// they name), and none of them changes it. Each failure counts in
// Redis.Stats().CorruptRecords and is logged through RedisConfig.Logger, at
// warning level the first time per key. The scripts cut long values before replying and tolerate keys of the
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
// most 1024 Servers per descriptor, each weight 0..10000; at most 64 Spot
// kinds per descriptor (each a Spot kind name, listed sorted and once); an
// encoded record at most 512 KiB.
//
// # Boundaries
//
// This package does no discovery, placement or liveness decisions; it
// stores and returns records. It must not import routemesh, spot, actors or
// any transport, and holds no package-level mutable state.
package location
