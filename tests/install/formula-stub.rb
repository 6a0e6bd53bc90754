# A stand-in for Homebrew's Formula DSL, since brew cannot run here (Linux, no Homebrew): it
# loads the formula, prints its dependencies ("DEP name [build]"), then really runs its install
# block in FAKE_SRC (a copy of the tree) with prefix FAKE_PREFIX, and its test block with
# testpath FAKE_TESTPATH: system, shell_output and assert_match do what Homebrew's do, and
# each command is printed ("RUN ..."). The path helpers are Homebrew's layout under a prefix.
# Used by tests/install/t-formula.sh.
require "pathname"

class Formula
  @test_block = nil
  class << self
    attr_reader :test_block

    def test(&block) = (Formula.instance_variable_set(:@test_block, block))
    def depends_on(dep)
      name, kind = dep.is_a?(Hash) ? dep.first : [dep, nil]
      puts ["DEP", name, kind].compact.join(" ") if name.is_a?(String)
    end

    def desc(*) = nil
    def homepage(*) = nil
    def head(*, **) = nil
    def url(*, **) = nil
    def sha256(*) = nil
    def license(*) = nil
    # On macOS the system's library: nothing to install (the formula's sqlite).
    def uses_from_macos(*, **) = nil
  end

  def prefix = Pathname.new(ENV.fetch("FAKE_PREFIX"))
  def bin = prefix/"bin"
  def share = prefix/"share"
  def pkgshare = share/"lume-metal"
  def man = share/"man"
  def man1 = man/"man1"
  def bash_completion = prefix/"etc/bash_completion.d"
  def zsh_completion = share/"zsh/site-functions"
  def fish_completion = share/"fish/vendor_completions.d"
  def testpath = Pathname.new(ENV.fetch("FAKE_TESTPATH"))

  def system(*args)
    args = args.map(&:to_s)
    puts "RUN #{args.join(" ")}"
    Kernel.system(*args) || raise("failed: #{args.join(" ")}")
  end

  def shell_output(cmd)
    puts "RUN #{cmd}"
    out = `#{cmd}`
    raise "failed (#{$?.exitstatus}): #{cmd}" unless $?.success?
    out
  end

  def assert_match(pattern, text)
    ok = pattern.is_a?(Regexp) ? pattern.match?(text) : text.include?(pattern)
    raise "no #{pattern.inspect} in:\n#{text}" unless ok
    puts "MATCHED #{pattern}"
  end
end

# Homebrew's ENV extension (superenv): recorded only.
def ENV.permit_arch_flags = puts("PERMIT_ARCH_FLAGS")

load ARGV.fetch(0)
f = LumeMetal.new
Dir.chdir(ENV.fetch("FAKE_SRC")) { f.install }
puts "INSTALLED"
Dir.chdir(ENV.fetch("FAKE_TESTPATH")) { f.instance_eval(&Formula.test_block) }
puts "TESTED"
