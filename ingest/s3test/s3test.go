// Package s3test starts a real S3 server for tests: versitygw, on a free
// loopback port over a temporary folder, with the AWS configuration chain
// pointed at it. The test command (scripts/test) installs versitygw.
package s3test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The credentials the server is started with.
const (
	Access = "reconcile-test"
	Secret = "reconcile-test-secret"
)

func versitygw(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("this test needs the versitygw S3 server, which is not installed: run scripts/test (it installs it), " +
		"or go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
	return ""
}

// Start starts versitygw for t and points the AWS configuration chain
// (AWS_ENDPOINT_URL_S3, credentials, region) at it. It stops with t. Tests
// that call it cannot be parallel: it sets the environment.
func Start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(versitygw(t), "--port", addr, "--access", Access, "--secret", Secret, "posix", t.TempDir())
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s: %s", addr, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+addr)
	t.Setenv("AWS_ACCESS_KEY_ID", Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

// Put writes objects to bucket (created when missing) with the SDK, as a
// provider's drop would.
func Put(t *testing.T, bucket string, objects map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(os.Getenv("AWS_ENDPOINT_URL_S3")), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: Access, SecretAccessKey: Secret}, nil
		})})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		var exists interface{ ErrorCode() string }
		if !errors.As(err, &exists) || !strings.HasPrefix(exists.ErrorCode(), "BucketAlready") {
			t.Fatal(err)
		}
	}
	for k, v := range objects {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(v)}); err != nil {
			t.Fatal(err)
		}
	}
}
