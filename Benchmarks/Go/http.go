// Go's net/http server, the HTTP benchmark's baseline: `http [port]` (0 or none: the system
// picks), prints `port=N` once listening, runs until killed. `GET /` answers `Hello, World!`
// as text/plain with its Content-Length, any other path 404; the Date header Go adds by
// default is left out so that every server of the benchmark sends the same bytes. The
// benchmark runs it with GOMAXPROCS=1.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

var hello = []byte("Hello, World!")

func handle(writer http.ResponseWriter, request *http.Request) {
	header := writer.Header()
	header["Date"] = nil // suppresses the Date header
	if request.URL.Path != "/" {
		header["Content-Type"] = []string{"text/plain"}
		header["Content-Length"] = []string{"9"}
		writer.WriteHeader(http.StatusNotFound)
		writer.Write([]byte("Not Found"))
		return
	}
	header["Content-Type"] = []string{"text/plain"}
	header["Content-Length"] = []string{"13"}
	writer.Write(hello)
}

func main() {
	port := "0"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, "http:", err)
		os.Exit(1)
	}
	fmt.Printf("port=%d\n", listener.Addr().(*net.TCPAddr).Port)
	server := &http.Server{Handler: http.HandlerFunc(handle)}
	server.Serve(listener)
}
