package test

// Physical-connection contract items checked on the process's real TCP
// sockets (read from /proc), not on the shape of an API:
//   - item 5: a MeshNode's ChannelNames share its one ROUTER and its one
//     connection per peer — adding ChannelNames adds no socket;
//   - item 19: automatic fanout subscribers make no physical connection to
//     each other (they open no listener; each holds one connection, to the
//     publisher);
//   - item 20: an automatic fanout publisher only binds and publishes its
//     descriptor; it starts no outbound connection.

import (
	"fmt"
	"net"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

func TestContract_Channels_ChannelNamesAddNoSocket(t *testing.T) {
	type counts struct{ listeners, dialed, accepted int }
	measure := func(t *testing.T, channels []string) counts {
		before := processSockets(t)
		o := zlink.NewOptions()
		m := o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness)
		for _, ch := range channels {
			m.Channel(ch).Server().HandleRequest("echo", echo)
		}
		srv := startHost(t, o).Mesh("game")
		port := endpointPort(t, srv.Endpoint())
		oc := zlink.NewOptions()
		mc := oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv")
		for _, ch := range channels {
			mc.Channel(ch).Client()
		}
		cli := startHost(t, oc).Mesh("game")
		waitPeerState(t, cli, "srv", routemesh.PeerReady)
		waitPeerState(t, srv, "cli", routemesh.PeerReady)
		for _, ch := range channels {
			if _, err := cli.Call(ctxT(t, 5*time.Second), ch, "echo", nil); err != nil {
				t.Fatalf("%s: %v", ch, err)
			}
		}
		fresh := newSockets(before, processSockets(t))
		c := counts{
			listeners: countSockets(fresh, func(s tcpSocket) bool { return s.listening && s.localPort == port }),
			dialed:    countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.remotePort == port }),
			accepted:  countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.localPort == port }),
		}
		// Two nodes: two listeners in all, whatever the number of channels.
		if n := countSockets(fresh, func(s tcpSocket) bool { return s.listening }); n != 2 {
			t.Fatalf("%d channels: %d new listening sockets for two nodes, want 2: %+v", len(channels), n, fresh)
		}
		return c
	}
	var one, many counts
	t.Run("one channel", func(t *testing.T) { one = measure(t, []string{"match"}) })
	t.Run("six channels", func(t *testing.T) {
		many = measure(t, []string{"match", "lobby", "chat", "rank", "guild", "shop"})
	})
	want := counts{listeners: 1, dialed: 1, accepted: 1}
	if one != want || many != want {
		t.Fatalf("sockets at the server's port: one channel %+v, six channels %+v, want %+v for both", one, many, want)
	}
}

// socketStore returns a Location Store of kind and the port of its Redis
// (0 for the in-memory store), whose connections are not the ones counted.
func socketStore(t *testing.T, kind string) (location.Store, int) {
	t.Helper()
	if kind == "memory" {
		return memStore(t), 0
	}
	srv := locationtest.StartRedis(t)
	return openRedis(t, srv.Addr()), endpointPort(t, "tcp://"+srv.Addr())
}

// notStore drops the sockets of the Location Store's own connections.
func notStore(ss []tcpSocket, storePort int) []tcpSocket {
	var out []tcpSocket
	for _, s := range ss {
		if storePort == 0 || (s.remotePort != storePort && s.localPort != storePort) {
			out = append(out, s)
		}
	}
	return out
}

func TestContract_Fanout_SubscribersOpenNoSocketBetweenThem(t *testing.T) {
	for _, kind := range fanoutStoreKinds {
		t.Run(kind, func(t *testing.T) {
			store, storePort := socketStore(t, kind)
			pub := startFanoutPub(t, "lobby", store)
			port := endpointPort(t, pub.Endpoint())
			before := processSockets(t)
			var boxes [3]inbox
			var subs []*fanout.Subscriber
			for i := range boxes {
				subs = append(subs, startFanoutSub(t, fanout.SubscriberConfig{Channel: "lobby", Automatic: true, Store: store}, &boxes[i]))
			}
			for _, s := range subs {
				waitFanoutState(t, s, pubKey(pub), fanout.StateLive)
			}
			if err := pub.Publish("", []byte("hello")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "every subscriber receives", 5*time.Second, func() bool {
				for i := range boxes {
					if boxes[i].from(pub.RID()) != 1 {
						return false
					}
				}
				return true
			})
			var fresh []tcpSocket
			waitFor(t, "one connection per subscriber to the publisher", 5*time.Second, func() bool {
				fresh = notStore(newSockets(before, processSockets(t)), storePort)
				return countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.remotePort == port }) == len(subs) &&
					countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.localPort == port }) == len(subs)
			})
			// Nothing else: no listener a subscriber could be dialled on, and
			// no connection that does not end at the publisher.
			if n := countSockets(fresh, func(s tcpSocket) bool { return s.listening }); n != 0 {
				t.Fatalf("subscribers opened %d listening sockets: %+v", n, fresh)
			}
			if n := countSockets(fresh, func(s tcpSocket) bool { return s.remotePort != port && s.localPort != port }); n != 0 {
				t.Fatalf("%d sockets of the subscribers do not end at the publisher: %+v", n, fresh)
			}
		})
	}
}

func TestContract_Fanout_PublisherOpensNoOutboundConnection(t *testing.T) {
	for _, kind := range fanoutStoreKinds {
		t.Run(kind, func(t *testing.T) {
			store, storePort := socketStore(t, kind)
			// A decoy: something listening, named by a MeshNode descriptor
			// of the same name. A publisher that dialled anything would be
			// seen here.
			decoy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = decoy.Close() })
			decoyPort := decoy.Addr().(*net.TCPAddr).Port
			if err := store.PutDescriptor(ctxT(t, 5*time.Second), location.Descriptor{
				Mesh: "events", RID: "decoy", Generation: 1, Revision: 1, Endpoint: fmt.Sprintf("tcp://127.0.0.1:%d", decoyPort),
				ObjectRole: location.RoleNone, Servers: map[string]uint16{"events": 100},
			}, time.Minute); err != nil {
				t.Fatal(err)
			}

			before := processSockets(t)
			pub := startFanoutPub(t, "events", store)
			port := endpointPort(t, pub.Endpoint())
			// It binds one listener and connects nowhere, over many
			// heartbeats and descriptor renewals.
			holdsFor(t, "the publisher holds only its listener", 20*fanoutHeartbeat, func() bool {
				fresh := notStore(newSockets(before, processSockets(t)), storePort)
				return len(fresh) == 1 && fresh[0].listening && fresh[0].localPort == port
			})
			// A subscriber joins: the only new connection is its dial to the
			// publisher (seen from both ends).
			var box inbox
			sub := startFanoutSub(t, fanout.SubscriberConfig{Channel: "events", Automatic: true, Store: store}, &box)
			waitFanoutState(t, sub, pubKey(pub), fanout.StateLive)
			if err := pub.Publish("", []byte("x")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "subscriber receives", 5*time.Second, func() bool { return box.from(pub.RID()) == 1 })
			fresh := notStore(newSockets(before, processSockets(t)), storePort)
			dialed := countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.remotePort == port })
			accepted := countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.localPort == port })
			outbound := countSockets(fresh, func(s tcpSocket) bool { return s.connected && s.remotePort != port && s.localPort != port })
			if dialed != 1 || accepted != 1 || outbound != 0 {
				t.Fatalf("after a subscriber joined: %d dialed to / %d accepted at the publisher, %d other connections (want 1/1/0): %+v",
					dialed, accepted, outbound, fresh)
			}
			if n := countSockets(processSockets(t), func(s tcpSocket) bool { return s.remotePort == decoyPort }); n != 0 {
				t.Fatalf("%d connections to the decoy MeshNode endpoint", n)
			}
		})
	}
}
