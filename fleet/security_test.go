package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
)

// Settings that cannot work are refused before a dial, and the API key
// shows in no way a Security or a Conn is printed.
func TestSecurity(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    Security
		says string
	}{
		{Security{CertFile: "c.pem"}, "both its certificate and its key"},
		{Security{KeyFile: "k.pem"}, "both its certificate and its key"},
		{Security{NoTLS: true, CAFile: notPEM}, "TLS is turned off"},
		{Security{CAFile: filepath.Join(dir, "missing.pem")}, "read TLS CA file"},
		{Security{CAFile: notPEM}, "holds no PEM certificate"},
		{Security{CertFile: notPEM, KeyFile: notPEM}, "load TLS client certificate"},
	} {
		var o client.Options
		if err := tc.s.apply(&o); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want %q", tc.s, err, tc.says)
		}
	}

	const key = "tmprl-KEYKEYKEY-0123456789"
	var o client.Options
	s := Security{APIKey: key, ServerName: "srv.test"}
	if err := s.apply(&o); err != nil {
		t.Fatal(err)
	}
	if o.Credentials == nil || o.ConnectionOptions.TLS == nil || o.ConnectionOptions.TLS.ServerName != "srv.test" {
		t.Errorf("options: credentials %v, TLS %+v", o.Credentials, o.ConnectionOptions.TLS)
	}
	var plain client.Options
	if err := (Security{APIKey: key, NoTLS: true}).apply(&plain); err != nil || !plain.ConnectionOptions.TLSDisabled {
		t.Errorf("--tls=false with a key: %v, disabled %v", err, plain.ConnectionOptions.TLSDisabled)
	}
	c := Conn{HostPort: "h:1", Security: s}
	for _, out := range []string{s.String(), fmt.Sprintf("%v", s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s),
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c)} {
		if strings.Contains(out, "KEYKEYKEY") {
			t.Errorf("the API key is printed: %s", out)
		}
	}
}
