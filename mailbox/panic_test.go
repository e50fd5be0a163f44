package mailbox

import (
	"errors"
	"fmt"
	"testing"
)

func TestPanic_UnwrapsErrorValue(t *testing.T) {
	sentinel := errors.New("x")
	var err error = &Panic{Value: fmt.Errorf("wrapped: %w", sentinel)}
	if !errors.Is(err, sentinel) {
		t.Fatal("Panic does not unwrap its error value")
	}
}
