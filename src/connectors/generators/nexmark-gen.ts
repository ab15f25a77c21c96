/**
 * The Nexmark event sequence (an online auction: persons, auctions, bids), generated deterministically from the
 * event number: event n is the same object in every generator, so separate streams generating at the same rate
 * (for instance one of auctions and one of bids) refer to the same ids and can be joined. Of every 50 events,
 * 1 is a person, 3 are auctions and 46 are bids. Field names and types are those of the Nexmark streams of
 * docs/connectors.md (nexmark): integers are `bigint`.
 */
import type { ValueObject } from '../../values/value.js';

export type NexmarkKind = 'person' | 'auction' | 'bid';

const PERSON_SHARE = 1;
const AUCTION_SHARE = 3;
const TOTAL_SHARE = 50;
const FIRST_PERSON_ID = 1000;
const FIRST_AUCTION_ID = 1000;
const CATEGORIES = 5;
/** how many recent auctions (and persons) a bid or an auction may refer to */
const IN_FLIGHT = 100;
/** one bid in HOT_RATIO goes to a random recent auction, the others to the current "hot" one */
const HOT_RATIO = 4;
const MAX_AUCTION_MS = 20_000;

const FIRST_NAMES = ['Peter', 'Paul', 'Luke', 'John', 'Saul', 'Vicky', 'Kate', 'Julie', 'Sarah', 'Deiter', 'Walter'];
const LAST_NAMES = ['Shultz', 'Abrams', 'Spencer', 'White', 'Bartels', 'Walton', 'Smith', 'Jones', 'Noris'];
const CITIES = [
  'phoenix',
  'los angeles',
  'san francisco',
  'boise',
  'portland',
  'bend',
  'redmond',
  'seattle',
  'kent',
  'cheyenne',
];
const STATES = ['az', 'ca', 'id', 'or', 'wa', 'wy'];
const CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];

/** The kind of event number `n`. */
export function nexmarkKind(n: number): NexmarkKind {
  const offset = n % TOTAL_SHARE;
  if (offset < PERSON_SHARE) return 'person';
  if (offset < PERSON_SHARE + AUCTION_SHARE) return 'auction';
  return 'bid';
}

/** Persons among events 0..n-1. */
function personsBefore(n: number): number {
  const epoch = Math.floor(n / TOTAL_SHARE);
  return epoch * PERSON_SHARE + Math.min(n % TOTAL_SHARE, PERSON_SHARE);
}

/** Auctions among events 0..n-1. */
function auctionsBefore(n: number): number {
  const epoch = Math.floor(n / TOTAL_SHARE);
  const offset = n % TOTAL_SHARE;
  return epoch * AUCTION_SHARE + Math.max(0, Math.min(offset, PERSON_SHARE + AUCTION_SHARE) - PERSON_SHARE);
}

/** A small PRNG (mulberry32) seeded by the event number: the same event always draws the same numbers. */
class Draw {
  private s: number;
  constructor(seed: number) {
    this.s = (seed * 2654435761) >>> 0;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(below: number): number {
    return Math.floor(this.next() * below);
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)];
  }
  text(len: number): string {
    let s = '';
    for (let i = 0; i < len; i++) s += String.fromCharCode(97 + this.int(26));
    return s;
  }
}

/** An id among the last IN_FLIGHT of `count` ids starting at `first` (the first id when none exists yet). */
function recentId(d: Draw, first: number, count: number): number {
  if (count <= 0) return first;
  return first + count - 1 - d.int(Math.min(count, IN_FLIGHT));
}

/** Event number `n` at time `now` (Unix ms), as a row of its stream. */
export function nexmarkEvent(n: number, now: number): ValueObject {
  const d = new Draw(n);
  const kind = nexmarkKind(n);
  const datetime = BigInt(now);
  if (kind === 'person') {
    const id = FIRST_PERSON_ID + personsBefore(n);
    const name = `${d.pick(FIRST_NAMES)} ${d.pick(LAST_NAMES)}`;
    return {
      id: BigInt(id),
      name,
      emailAddress: `${d.text(7)}@${d.text(5)}.com`,
      creditCard: `${1000 + d.int(9000)} ${1000 + d.int(9000)} ${1000 + d.int(9000)} ${1000 + d.int(9000)}`,
      city: d.pick(CITIES),
      state: d.pick(STATES),
      datetime,
      extra: d.text(8),
    };
  }
  if (kind === 'auction') {
    const id = FIRST_AUCTION_ID + auctionsBefore(n);
    const initialBid = 100 + d.int(10_000);
    return {
      id: BigInt(id),
      itemName: d.text(10),
      description: d.text(20),
      initialBid: BigInt(initialBid),
      reserve: BigInt(initialBid + d.int(10_000)),
      datetime,
      expires: BigInt(now + 1000 + d.int(MAX_AUCTION_MS)),
      seller: BigInt(recentId(d, FIRST_PERSON_ID, personsBefore(n))),
      category: BigInt(d.int(CATEGORIES)),
      extra: d.text(8),
    };
  }
  const auctions = auctionsBefore(n);
  const hot = FIRST_AUCTION_ID + Math.max(0, auctions - 1);
  const auction = d.int(HOT_RATIO) === 0 ? recentId(d, FIRST_AUCTION_ID, auctions) : hot;
  return {
    auction: BigInt(auction),
    bidder: BigInt(recentId(d, FIRST_PERSON_ID, personsBefore(n))),
    price: BigInt(Math.round(Math.pow(10, d.next() * 4) * 100)),
    channel: d.pick(CHANNELS),
    url: `https://www.nexmark.com/${d.text(5)}/item.htm?query=1`,
    datetime,
    extra: d.text(8),
  };
}
