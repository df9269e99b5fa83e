# SPDX-License-Identifier: BSD-2-Clause
# Ruby of known shares for tests/unwind/ruby.sh: Shares#five, Shares#three
# and Shares.two (the names Ruby's profiler API gives, and kiln) take CPU
# time 5:3:2 until ARGV[0] CPU seconds have passed,
# each spinning in a block (`block in spin`) that calls a C method
# (Integer#times). With "threads", a second thread compresses a buffer in C
# with the GVL released (Zlib's deflate, deflate_worker) while the main
# thread spins in Ruby (rb_spin): each thread's time must stay on its own
# stack. Prints the CPU seconds each method took, as JSON, at the
# end. Each call spins a random 50-150 % of its share, so the rounds cannot
# alias with the sampling period.
require "json"
require "zlib"

def cpu
  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
end

class Shares
  attr_reader :spent

  def initialize
    @spent = Hash.new(0.0)
    @rng = Random.new
  end

  def spin(seconds)
    finish = cpu + seconds
    n = 0
    while cpu < finish
      300.times { |i| n += i * i }
    end
    n
  end

  def five
    t = cpu
    spin(0.005 * @rng.rand(0.5..1.5))
    @spent["Shares#five"] += cpu - t
  end

  def three
    t = cpu
    spin(0.003 * @rng.rand(0.5..1.5))
    @spent["Shares#three"] += cpu - t
  end

  def self.two(s, rng)
    t = cpu
    s.spin(0.002 * rng.rand(0.5..1.5))
    s.spent["Shares.two"] += cpu - t
  end
end

def rb_spin(seconds)
  Shares.new.spin(seconds)
end

def deflate_worker(seconds, out)
  rng = Random.new(1)
  data = Array.new(1 << 16) { rng.rand(64).to_s(36) * 8 }.join
  t = cpu
  Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION) while cpu - t < seconds
  out["Object#deflate_worker"] = cpu - t
end

def main
  seconds = ARGV[0].to_f
  if ARGV[1] == "threads"
    out = {}
    th = Thread.new { deflate_worker(seconds, out) }
    t = cpu
    rb_spin(seconds)
    out["Object#rb_spin"] = cpu - t
    th.join
    puts JSON.generate(out)
    return
  end
  s = Shares.new
  rng = Random.new
  finish = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) + seconds
  while Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) < finish
    s.five
    s.three
    Shares.two(s, rng)
  end
  puts JSON.generate(s.spent)
end

main
