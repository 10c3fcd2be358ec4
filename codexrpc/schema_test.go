package codexrpc_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/integration/itest"
)

// TestSchemaHasWhatTheClientUses checks the binary is the version asked
// for, and holds the method names, notification names and fields the
// client and a front rely on to the schema the installed Codex generates
// (codexrpc.CheckSchema, which flower doctor runs too): a release that
// renames one fails here.
func TestSchemaHasWhatTheClientUses(t *testing.T) {
	bin := itest.CodexPath(t)
	if out, err := exec.Command(bin, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "codex-cli "+itest.CodexVersion {
		t.Fatalf("%s --version: %q, %v; want codex-cli %s", bin, out, err, itest.CodexVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := codexrpc.CheckSchema(ctx, bin); err != nil {
		t.Error(err)
	}
}

// A binary that generates no schema is named as such, not taken as one
// that has every name.
func TestCheckSchemaFailsWithoutASchema(t *testing.T) {
	err := codexrpc.CheckSchema(context.Background(), "/bin/true")
	if err == nil || !strings.Contains(err.Error(), "the generated schema") {
		t.Fatalf("CheckSchema on /bin/true: %v, want it to say the schema is missing", err)
	}
}
