package loopnet

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestARangeIsClaimedByOneProcessAtATime(t *testing.T) {
	cidr := netip.MustParsePrefix("127.0.94.0/24")
	// The holder is another process, as a second podgate run would be:
	// this test binary, started again to claim the range and wait.
	if os.Getenv("LOOPNET_CLAIM_HOLDER") != "" {
		c, err := ClaimRange(cidr)
		if err != nil {
			fmt.Println("claim:", err)
			os.Exit(1)
		}
		defer c.Close()
		fmt.Println("claimed")
		time.Sleep(time.Minute)
		return
	}
	holder := exec.Command(os.Args[0], "-test.run", "^TestARangeIsClaimedByOneProcessAtATime$")
	holder.Env = append(os.Environ(), "LOOPNET_CLAIM_HOLDER=1")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	line := make([]byte, len("claimed\n"))
	if _, err := out.Read(line); err != nil || string(line) != "claimed\n" {
		t.Fatalf("the holder said %q, %v", line, err)
	}

	t.Run("a second claim of the range names the holder's pid", func(t *testing.T) {
		_, err := ClaimRange(cidr)
		var inUse *RangeInUseError
		if !errors.As(err, &inUse) {
			t.Fatalf("got %v, want a RangeInUseError", err)
		}
		if want := fmt.Sprintf("pid %d (", holder.Process.Pid); !strings.Contains(inUse.Holder, want) {
			t.Errorf("holder %q, want it to name %s…)", inUse.Holder, want)
		}
		if !strings.Contains(err.Error(), "pod range 127.0.94.0/24 is in use by pid") {
			t.Errorf("error %q", err)
		}
	})
	t.Run("another range is free", func(t *testing.T) {
		c, err := ClaimRange(netip.MustParsePrefix("127.0.99.0/24"))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
	t.Run("the range is free again once its holder is gone", func(t *testing.T) {
		_ = holder.Process.Kill()
		_ = holder.Wait()
		c, err := ClaimRange(cidr)
		if err != nil {
			t.Fatalf("after the holder was killed: %v", err)
		}
		// And free after Close too.
		c.Close()
		c, err = ClaimRange(cidr)
		if err != nil {
			t.Fatalf("after Close: %v", err)
		}
		c.Close()
	})
}
