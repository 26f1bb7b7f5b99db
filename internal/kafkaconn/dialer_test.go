package kafkaconn

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

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testCert returns a self-signed certificate for localhost and 127.0.0.1,
// and its key, as PEM.
func testCert(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
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
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// kgo refuses a Dialer together with DialTLSConfig, so with TLS and a tcp
// dialer the TLS handshake is dialled here, over that dialer, with the
// broker's host as the server name, as DialTLSConfig would: a TLS listener
// sees it.
func TestTLSDialServerName(t *testing.T) {
	cl, err := kgo.NewClient(Config{
		SeedBrokers: []string{"127.0.0.1:1"},
		TLS:         &tls.Config{},
		Dialer:      &net.Dialer{Timeout: 5 * time.Second},
	}.Opts()...)
	require.NoError(t, err, "kgo accepts the options")
	cl.Close()

	// The handshake runs over the tcp dialer with the broker's host as the
	// server name: a TLS listener sees it.
	certPEM, keyPEM := testCert(t)
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	require.NoError(t, err)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	defer l.Close()
	names := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		tc := conn.(*tls.Conn)
		if tc.Handshake() == nil {
			names <- tc.ConnectionState().ServerName
		}
	}()
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM([]byte(certPEM)))
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tlsDial(dialer, &tls.Config{RootCAs: pool})(t.Context(), "tcp", net.JoinHostPort("localhost", port))
	require.NoError(t, err, "the certificate is for localhost: the server name came from the address")
	conn.Close()
	require.Equal(t, "localhost", <-names)
}
