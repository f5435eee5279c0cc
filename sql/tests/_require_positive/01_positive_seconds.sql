-- _require_positive: a positive, finite number of seconds becomes an
-- interval; null, zero, negative, NaN and infinities raise TQ004.
begin;
select plan(9);

select is(ticketiq._require_positive('ttl', 8), interval '8 seconds', '8 seconds');
select is(ticketiq._require_positive('ttl', 0.25), interval '0.25 seconds', 'fractions of a second');
select is(ticketiq._require_positive('ttl', 86400), interval '86400 seconds', 'a day');
select throws_ok($$select ticketiq._require_positive('ttl', null)$$, 'TQ004', null, 'null');
select throws_ok($$select ticketiq._require_positive('ttl', 0)$$, 'TQ004', null, 'zero');
select throws_ok($$select ticketiq._require_positive('ttl', -0.5)$$, 'TQ004', null, 'negative');
select throws_ok($$select ticketiq._require_positive('ttl', 'NaN')$$, 'TQ004', null, 'NaN');
select throws_ok($$select ticketiq._require_positive('ttl', 'Infinity')$$, 'TQ004', null, 'Infinity');
select throws_ok($$select ticketiq._require_positive('ttl', '-Infinity')$$, 'TQ004', null, '-Infinity');

select * from finish();
rollback;
