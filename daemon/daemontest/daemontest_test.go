package daemontest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartStopRestart(t *testing.T) {
	d := daemontest.Start(t)
	if len(d.Socket()) >= 108 {
		t.Errorf("socket path %q is too long for a unix socket", d.Socket())
	}
	home, _ := os.UserHomeDir()
	for _, dir := range []string{d.StateDir(), d.Home(), d.Options().ConfigHome} {
		if home != "" && strings.HasPrefix(dir, home+"/") {
			t.Errorf("daemon directory %q is in the real home", dir)
		}
	}
	ctx := context.Background()
	cs, err := d.Client().CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	d2 := daemontest.Start(t, daemontest.WithStateDir(d.StateDir()))
	gs, err := d2.Client().GetSession(ctx, &tacklev1.GetSessionRequest{Id: cs.GetSession().GetId()})
	if err != nil || gs.GetSession().GetCwd() != cs.GetSession().GetCwd() {
		t.Fatalf("session after restart: %v, %v", gs, err)
	}
}
