// Package testcert makes self-signed TLS certificates for tests: one
// certificate, its own CA, valid for an hour for localhost and 127.0.0.1.
// New is safe for concurrent use.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// Cert is a self-signed certificate and its key, as PEM and as a
// tls.Certificate for a server. It is a value, safe for concurrent reads.
type Cert struct {
	CertPEM, KeyPEM string
	TLS             tls.Certificate
}

// Pool returns a pool that trusts c, for a client; it fails t if the PEM
// does not parse.
func (c Cert) Pool(t testing.TB) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.CertPEM)) {
		t.Fatal("testcert: the certificate's PEM does not parse")
	}
	return pool
}

// New returns a fresh certificate for localhost and 127.0.0.1; it fails t
// if one cannot be made.
func New(t testing.TB) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := Cert{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
	}
	if c.TLS, err = tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM)); err != nil {
		t.Fatal(err)
	}
	return c
}
