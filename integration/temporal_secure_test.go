package integration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flowerhq/flower/scriptedapi"
)

// oneGenerationJob: the step's one generation runs a command and is done.
func oneGenerationJob() scriptedapi.Script {
	j := &job{plans: [][]scriptedapi.Reply{{bash(30_000, "echo done >> work.txt"), done(40_000)}}, handoff: goodHandoff}
	return j.script
}

// A worker runs steps only in its workspace roots, links resolved: a step
// elsewhere, or behind a link in a root that leads out of it, is refused
// without a harness starting or a file being written, and the step shows
// the refusal in submit --wait and show --temporal; a step inside runs.
func TestTemporalWorkspaceRoots(t *testing.T) {
	ts := startTemporal(t)
	srv := startServer(t, oneGenerationJob())
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	queue := randomID("q")
	worker := startFlower(t, harnessEnv(t, srv), "worker", "--temporal", ts.addr, "--task-queue", queue, "--identity", "worker-roots",
		"--harness", harnessPath(t), "--workspace-root", root, "--", "--allowedTools", "Bash")

	refused := map[string]string{} // workflow id: what its refusal says
	for _, tc := range []struct {
		name, ws, says string
	}{
		{"outside", outside, "is outside this worker's workspace roots (" + root + ")"},
		{"link out of the root", filepath.Join(root, "escape"), "(it leads to " + outside + ") is outside this worker's workspace roots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := randomID("refused")
			refused[id] = tc.says
			// The task carries a title change and a screen clear, which
			// show --temporal prints escaped.
			code, out := runFlowerCLI(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", tc.ws,
				"--id", id, "--wait", "Build the shim. TASK-MARK \x1b]0;pwned\x07\x1b[2J")
			if code != 1 || !strings.Contains(out, tc.says) || !strings.Contains(out, "worker worker-roots refuses step main") {
				t.Fatalf("submit --wait exited %d, want 1 and the refusal (%q):\n%s", code, tc.says, out)
			}
			show := ts.show(t, id)
			if !strings.Contains(show, tc.says) || !strings.Contains(show, "step main: failed") {
				t.Errorf("flower show --temporal does not show the refusal:\n%s", show)
			}
			if strings.ContainsAny(show, "\x1b\x07") || !strings.Contains(show, `TASK-MARK \x1b]0;pwned\x07\x1b[2J`) {
				t.Errorf("flower show --temporal does not escape the task:\n%q", show)
			}
			if h := ts.history(t, id); len(h.inputs) != 1 {
				t.Errorf("the refused generation was tried %d times, want once", len(h.inputs))
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("the refused step wrote into %s: %v", outside, entries)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("a harness ran for a refused step: %d requests", n)
	}
	t.Run("inside", func(t *testing.T) {
		ws := filepath.Join(root, "app")
		code, out := runFlowerCLI(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
			"--id", randomID("inside"), "--wait", "Build the shim. TASK-MARK")
		if code != 0 {
			t.Fatalf("submit --wait of a step inside the root exited %d:\n%s", code, out)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "work.txt")); err != nil || string(b) != "done\n" {
			t.Errorf("work.txt: %q, %v", b, err)
		}
	})
	// A refused step shows with no worker left to answer a query: its
	// status went with its error.
	_ = worker.cmd.Process.Kill()
	<-worker.exited
	for id, says := range refused {
		if show := ts.show(t, id); !strings.Contains(show, says) {
			t.Errorf("flower show --temporal %s with no worker does not show the refusal:\n%s", id, show)
		}
	}
}

// Flags that cannot work are refused before any server is dialled: a
// worker without a workspace root or with one that is not a directory,
// numbers out of range.
func TestTemporalFlagChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs flower")
	}
	addr := "127.0.0.1:1" // never dialled
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"worker", "--temporal", addr, "--task-queue", "q", "--harness", "/bin/true"}, "no workspace root: give --workspace-root DIR"},
		{[]string{"worker", "--temporal", addr, "--task-queue", "q", "--harness", "/bin/true", "--workspace-root", file}, "workspace root " + file + " is not a directory"},
		{[]string{"worker", "--temporal", addr, "--task-queue", "q", "--harness", "/bin/true", "--workspace-root", "/", "--turn-timeout", "-5s"}, "--turn-timeout must not be negative"},
		{[]string{"worker", "--temporal", addr, "--task-queue", "q", "--harness", "/bin/true", "--workspace-root", "/", "--max-attempts", "0"}, "--max-attempts must be at least 1"},
		{[]string{"submit", "--temporal", addr, "--task-queue", "q", "--heartbeat-timeout", "-1s", "x"}, "--heartbeat-timeout must be at least 1s"},
		{[]string{"submit", "--temporal", addr, "--task-queue", "q", "--heartbeat-timeout", "0", "x"}, "--heartbeat-timeout must be at least 1s"},
		{[]string{"show", "--temporal", addr, "--tls-cert-path", file, "x"}, "needs both its certificate and its key"},
	} {
		code, out := runFlowerCLI(t, os.Environ(), tc.args...)
		if code != 2 || !strings.Contains(out, tc.says) {
			t.Errorf("flower %s exited %d, want 2 and %q:\n%s", strings.Join(tc.args, " "), code, tc.says, out)
		}
	}
}

// Through a server that wants TLS with a client certificate (mTLS) and an
// API key: a loopback gRPC proxy in front of the dev server, with a CA,
// server and client certificates made here, that checks each call's
// "authorization" metadata and forwards it. With the flags, a worker,
// submit --wait and show all work through it, the key from
// $TEMPORAL_API_KEY or --api-key, and every call they made carried the
// key; without any one of them, show fails with one line; the key is
// printed nowhere.
func TestTemporalTLSAndAPIKey(t *testing.T) {
	ts := startTemporal(t)
	const serverName = "flower-temporal.test"
	const apiKey = "tmprl-APIKEY-SECRET-0123456789abcdef"
	pki := newTestPKI(t, serverName)
	px := startAuthProxy(t, ts.addr, pki, "Bearer "+apiKey)
	srv := startServer(t, oneGenerationJob())

	tlsFlags := []string{"--tls-ca-path", pki.caFile, "--tls-cert-path", pki.clientCert, "--tls-key-path", pki.clientKey, "--tls-server-name", serverName}
	conn := func(extra ...string) []string {
		return append([]string{"--temporal", px.addr}, append(tlsFlags, extra...)...)
	}
	keyEnv := func() []string { return harnessEnv(t, srv, "TEMPORAL_API_KEY="+apiKey) }
	queue, id := randomID("q"), randomID("secure")
	worker := startFlower(t, keyEnv(), append(append([]string{"worker"}, conn()...), "--task-queue", queue, "--identity", "worker-tls",
		"--harness", harnessPath(t), "--workspace-root", os.TempDir(), "--", "--allowedTools", "Bash")...)
	var outputs []string
	code, out := runFlowerCLI(t, keyEnv(), append(append([]string{"submit"}, conn()...), "--task-queue", queue, "-C", t.TempDir(),
		"--id", id, "--wait", "Build the shim. TASK-MARK")...)
	outputs = append(outputs, out)
	if code != 0 {
		t.Fatalf("submit --wait through TLS and the API key exited %d:\n%s\nworker:\n%s", code, out, worker.output())
	}
	// The key on the command line instead of the environment.
	code, out = runFlowerCLI(t, harnessEnv(t, srv), append(append([]string{"show"}, conn("--api-key", apiKey)...), id)...)
	outputs = append(outputs, out)
	if code != 0 || !strings.Contains(out, "step main: succeeded") {
		t.Fatalf("show --temporal through TLS with --api-key exited %d:\n%s", code, out)
	}
	with, without := px.calls()
	if with < 5 || without != 0 {
		t.Errorf("the proxy saw %d calls with the key and %d without, want every call with it", with, without)
	}

	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"plain", []string{"--temporal", px.addr}, nil},
		{"no CA", []string{"--temporal", px.addr, "--tls-cert-path", pki.clientCert, "--tls-key-path", pki.clientKey, "--tls-server-name", serverName}, keyEnv()},
		{"no client certificate", []string{"--temporal", px.addr, "--tls-ca-path", pki.caFile, "--tls-server-name", serverName}, keyEnv()},
		{"no server name", []string{"--temporal", px.addr, "--tls-ca-path", pki.caFile, "--tls-cert-path", pki.clientCert, "--tls-key-path", pki.clientKey}, keyEnv()},
		{"no API key", conn(), harnessEnv(t, srv)},
		{"wrong API key", conn("--api-key", apiKey+"-wrong"), harnessEnv(t, srv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out := runFlowerCLI(t, tc.env, append(append([]string{"show"}, tc.args...), id)...)
			outputs = append(outputs, out)
			if code == 0 || strings.Contains(out, "succeeded") {
				t.Fatalf("show --temporal worked without what the server wants (exit %d):\n%s", code, out)
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(out, "flower: ") {
				t.Errorf("want one line saying why, got:\n%s", out)
			}
			t.Logf("%s: exit %d after %v: %s", tc.name, code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
		})
	}
	if _, without := px.calls(); without == 0 {
		t.Errorf("the calls without the key did not reach the proxy: the rows above failed for another reason")
	}
	outputs = append(outputs, worker.output())
	for _, out := range outputs {
		if strings.Contains(out, "APIKEY-SECRET") {
			t.Errorf("the API key was printed:\n%s", out)
		}
	}
}

// testPKI is a CA of the test's own, a server certificate for one DNS
// name (and no IP: the name must be given to check it), and a client
// certificate, as PEM files.
type testPKI struct {
	caFile, clientCert, clientKey string
	ca                            *x509.CertPool
	server                        tls.Certificate
}

func newTestPKI(t *testing.T, serverName string) *testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flower test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, dns []string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	p := &testPKI{ca: x509.NewCertPool()}
	p.ca.AddCert(caCert)
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := issue(2, serverName, []string{serverName}, x509.ExtKeyUsageServerAuth)
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	cliDER, cliKey := issue(3, "flower test client", nil, x509.ExtKeyUsageClientAuth)
	p.clientCert = write("client.pem", "CERTIFICATE", cliDER)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKey = write("client-key.pem", "PRIVATE KEY", keyDER)
	return p
}

// authProxy is a gRPC server on 127.0.0.1 that takes TLS with a client
// certificate the test CA signed, refuses a call whose authorization is
// not the one it wants, and forwards the rest, frames as they are, to the
// dev server.
type authProxy struct {
	addr          string
	mu            sync.Mutex
	with, without int
}

func (p *authProxy) calls() (with, without int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.with, p.without
}

// rawCodec passes gRPC messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func startAuthProxy(t *testing.T, backend string, pki *testPKI, wantAuth string) *authProxy {
	t.Helper()
	up, err := grpc.NewClient(backend, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	p := &authProxy{}
	forward := func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		md, _ := metadata.FromIncomingContext(ss.Context())
		ok := len(md.Get("authorization")) == 1 && md.Get("authorization")[0] == wantAuth
		p.mu.Lock()
		if ok {
			p.with++
		} else {
			p.without++
		}
		p.mu.Unlock()
		if !ok {
			return status.Error(codes.Unauthenticated, "a valid API key is required")
		}
		out := metadata.MD{}
		for k, v := range md {
			if !strings.HasPrefix(k, ":") && k != "content-type" && k != "user-agent" && k != "authorization" {
				out[k] = v
			}
		}
		ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ss.Context(), out))
		defer cancel()
		cs, err := up.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err != nil {
			return err
		}
		go func() {
			for {
				var m []byte
				if err := ss.RecvMsg(&m); err != nil {
					_ = cs.CloseSend()
					return
				}
				if err := cs.SendMsg(&m); err != nil {
					return
				}
			}
		}()
		if hdr, err := cs.Header(); err == nil {
			_ = ss.SendHeader(hdr)
		}
		for {
			var m []byte
			if err := cs.RecvMsg(&m); err != nil {
				ss.SetTrailer(cs.Trailer())
				if err == io.EOF {
					return nil
				}
				return err
			}
			if err := ss.SendMsg(&m); err != nil {
				return err
			}
		}
	}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.ca,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	gs := grpc.NewServer(grpc.Creds(creds), grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(forward))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return p
}

// Under a worker, a repository script the model runs writes
// .claude/settings.json with a SessionStart hook that would hand the key to
// a file. No harness of that step starts after it: the next generation is
// weighed again, refused with the file named, and never reaches the model;
// the hook never ran.
func TestTemporalMidRunSettingsWriteIsRefused(t *testing.T) {
	ts := startTemporal(t)
	ws, leak, j := plantSettingsWrite(t)
	srv := startServer(t, j.script)
	queue := randomID("q")
	startFlower(t, harnessEnv(t, srv, noScrub), "worker", "--temporal", ts.addr, "--task-queue", queue, "--identity", "worker-midrun",
		"--harness", harnessPath(t), "--workspace-root", ws, "--window", "200000", "--", "--allowedTools", "Bash")
	code, out := runFlowerCLI(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", randomID("midrun"), "--wait", hostileTask)
	if _, err := os.Stat(filepath.Join(ws, ".claude", "settings.json")); err != nil {
		t.Fatalf("the plant was not written (%v): it proves nothing\n%s", err, out)
	}
	if code != 1 || !strings.Contains(out, "worker worker-midrun refuses step main") || !strings.Contains(out, ".claude/settings.json") {
		t.Fatalf("submit --wait exited %d, want 1 and the refusal naming the file:\n%s", code, out)
	}
	if _, err := os.Lstat(leak); err == nil {
		t.Errorf("the planted hook ran")
	}
	if n := j.generationsSeen(); n != 1 {
		t.Errorf("%d generations reached the model, want 1", n)
	}
}
