# SPDX-License-Identifier: BSD-2-Clause
# Seeds of tests/fuzz/rb_lines.c: line tables of real Ruby 3.1 instruction
# sequences, packed as symbolize/rb_lines.h says, each twice: with the
# positions array and with the succinct table Ruby builds from it (iseq.c's
# layout, built here the same way). Run with ruby3.1:
#   ruby3.1 tests/fuzz/rb_lines_seeds.rb tests/fuzz/corpus/rb_lines
require "fileutils"
require "json"

IMMEDIATE = 54

# [[position, line], ...] of an iseq: where each run of one line begins.
def entries(iseq)
  pos = 0
  line = nil
  out = []
  iseq.to_a.last.each do |x|
    case x
    when Integer then line = x
    when Array
      out << [pos, line] if line && (out.empty? || out.last[1] != line)
      pos += x.size
    end
  end
  [out, pos]
end

def succinct(positions, size)
  imm = Array.new(IMMEDIATE / 9, 0)
  r = 0
  (0...(IMMEDIATE / 9)).each do |j|
    9.times do |i|
      r += 1 if r < positions.size && positions[r] == j * 9 + i
      imm[j] |= r << (7 * i)
    end
  end
  blocks = size < IMMEDIATE ? 0 : (size - IMMEDIATE + 511) / 512
  out = imm.pack("Q<*")
  blocks.times do |k|
    rank = r
    small = 0
    small_rank = 0
    words = Array.new(8) do |j|
      small |= small_rank << (9 * (j - 1)) if j.positive?
      bits = 0
      64.times do |i|
        if r < positions.size && positions[r] == k * 512 + j * 64 + i + IMMEDIATE
          bits |= 1 << i
          r += 1
        end
      end
      small_rank += bits.to_s(2).count("1")
      bits
    end
    out << [rank, 0, small].pack("L<L<Q<") << words.pack("Q<*")
  end
  out
end

dir = ARGV[0]
FileUtils.mkdir_p(dir)
{
  "json" => RubyVM::InstructionSequence.of(JSON.method(:generate)),
  "fileutils" => RubyVM::InstructionSequence.of(FileUtils.method(:mkdir_p)),
  "succinct" => RubyVM::InstructionSequence.of(method(:succinct)),
  "entries" => RubyVM::InstructionSequence.of(method(:entries)),
}.each do |name, iseq|
  e, size = entries(iseq)
  pos = e.map(&:first)
  lines = e.map(&:last).pack("L<*")
  File.binwrite(File.join(dir, "seed-#{name}-positions"),
                [e.size, 1].pack("L<L<") + lines + pos.pack("L<*"))
  File.binwrite(File.join(dir, "seed-#{name}-succinct"),
                [e.size, 2].pack("L<L<") + lines + succinct(pos, size))
end
