package fleet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"go.temporal.io/sdk/client"
)

// Security says how a client proves itself to a secured server and checks
// the server (DESIGN.md «Secured servers»): TLS, with a CA of its own, a
// client certificate (mTLS) and a server name, and an API key, sent as
// "authorization: Bearer KEY" on every call. The zero value is a plain
// connection, as to a dev server.
type Security struct {
	// TLS turns TLS on with the system's roots; any of the files or the
	// server name turns it on too. NoTLS turns it off even with an API
	// key (which turns it on otherwise); both at once is an error.
	TLS, NoTLS bool
	// CAFile is a PEM bundle of the CAs that may sign the server's
	// certificate, instead of the system's.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key (PEM),
	// both or neither.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must carry, when it
	// differs from the host dialled.
	ServerName string
	// APIKey is never shown: String masks it, and Dial's errors never
	// hold it.
	APIKey string
}

// String says what is configured, the API key masked.
func (s Security) String() string {
	key := "none"
	if s.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("tls=%v ca=%q cert=%q key=%q server-name=%q api-key=%s", s.tlsOn(), s.CAFile, s.CertFile, s.KeyFile, s.ServerName, key)
}

// GoString keeps %#v from printing the key.
func (s Security) GoString() string { return "fleet.Security{" + s.String() + "}" }

func (s Security) tlsOn() bool {
	return s.TLS || s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.ServerName != ""
}

// apply sets the connection options and credentials of o from s, with the
// SDK's own options: ConnectionOptions.TLS and NewAPIKeyStaticCredentials.
func (s Security) apply(o *client.Options) error {
	if s.NoTLS && s.tlsOn() {
		return errors.New("TLS is turned off, yet TLS files or a server name are given: drop one or the other")
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("a client certificate needs both its certificate and its key file")
	}
	if s.tlsOn() {
		cfg := &tls.Config{ServerName: s.ServerName, MinVersion: tls.VersionTLS12}
		if s.CAFile != "" {
			pem, err := os.ReadFile(s.CAFile)
			if err != nil {
				return fmt.Errorf("read TLS CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("TLS CA file %s holds no PEM certificate", s.CAFile)
			}
			cfg.RootCAs = pool
		}
		if s.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
			if err != nil {
				return fmt.Errorf("load TLS client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		o.ConnectionOptions.TLS = cfg
	}
	o.ConnectionOptions.TLSDisabled = s.NoTLS
	if s.APIKey != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(s.APIKey)
	}
	return nil
}
