package actors_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
)

// greeter answers a Request with a greeting and counts what it was told.
type greeter struct{ told int }

func (g *greeter) Receive(c *actors.Context) {
	switch m := c.Message().(type) {
	case *actors.Started:
		// c.Self() is this actor's Ref: hand it to timers and goroutines.
	case string:
		g.told++
		c.Respond(fmt.Sprintf("hello %s (%d)", m, g.told))
	}
}

func ExampleSystem_Spawn() {
	sys := actors.NewSystem(actors.DefaultConfig())
	defer func() { _ = sys.Shutdown(context.Background()) }()

	ref, err := sys.Spawn(actors.Spec{Name: "greeter", MaxMessages: 64,
		Producer: func() actors.Actor { return &greeter{} }})
	if err != nil {
		panic(err)
	}
	_ = ref.Tell("tell") // nobody waits: Respond does nothing
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := ref.Request(ctx, "request")
	fmt.Println(v, err)
	// Output: hello request (2) <nil>
}
