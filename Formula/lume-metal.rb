# Homebrew formula, in a tap layout: this repository is its own tap.
#   brew tap lume-metal/lume-metal URL-OF-THIS-REPOSITORY
#   brew install --HEAD lume-metal/lume-metal/lume-metal
# The source is the tap's own clone (file:// below), so no URL outside it is assumed; the
# formula is HEAD-only until the project publishes release tarballs. tests/install/t-formula.sh
# checks the dependencies and install paths against the Makefile.
class LumeMetal < Formula
  desc "Deploy a Metal capability shim to a fleet of Lume macOS guests, safely"
  homepage "file://#{File.expand_path("..", __dir__)}"
  head "file://#{File.expand_path("..", __dir__)}", using: :git

  # One per pkg-config package of the Makefile's PKGS (libssh2 libcjson libarchive libcrypto
  # libcurl sqlite3); libarchive, openssl@3 and curl are keg-only, found through brew --prefix;
  # sqlite3 (the ledger's database) is macOS's own.
  depends_on "pkg-config" => :build
  depends_on "cjson"
  depends_on "curl"
  depends_on "libarchive"
  depends_on "libssh2"
  depends_on "openssl@3"
  depends_on :macos
  uses_from_macos "sqlite"

  def install
    args = %W[
      PREFIX=#{prefix}
      MANDIR=#{man}
      BASHCOMPDIR=#{bash_completion}
      ZSHCOMPDIR=#{zsh_completion}
      FISHCOMPDIR=#{fish_completion}
    ]
    # The shim and probe natively: clang -arch arm64 -arch arm64e, ad-hoc signed (shim/shim.mk);
    # Homebrew's compiler wrapper drops -arch flags unless told otherwise.
    ENV.permit_arch_flags
    system "make", "plugin/lume-metal", "shim", *args
    system "make", "install", *args
  end

  test do
    version_text = shell_output("#{bin}/lume-metal --version")
    assert_match "data: #{pkgshare} (installed)", version_text
    assert_match "shim: sha256 ", version_text
    system bin/"lume-metal", "build", "--target", "macos", "-o", testpath/"payload.tar.gz"
    system bin/"lume-metal", "verify", testpath/"payload.tar.gz"
    assert_match "lib/liblumemetal.dylib", shell_output("tar -tzf #{testpath}/payload.tar.gz")
  end
end
