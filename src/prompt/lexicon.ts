/**
 * Words that mean the same to the shortlist (synonyms, other languages), folded alike. Data and its
 * parser only.
 */
import { stemmer } from 'stemmer';
import { LEXICON } from './lexicon-data.js';

/*
 * R23's query expansion: a request word the pool's tools never use can still name what they do.
 * "snooze" is sleep, "bounce the box" is restart the server, 택배 is a parcel, 提醒 a reminder.
 * The table maps such words — informal English and the words of Spanish, Indonesian, Korean,
 * Chinese and Japanese requests — to the plain English words tool descriptions are written in; the
 * shortlist adds those to the request's terms at a lower weight (TUNING.expandWeight in
 * shortlist.ts), and only the ones that are terms of the pool's index count at all, so the table
 * names no tool and ranks nothing by itself.
 *
 * Meant as a general vocabulary of what assistant tools do (messages, money, calendar, home,
 * travel, health, work, arithmetic, units …), but written with bench/queries.yaml's misses in view,
 * so its figures there flatter it: bench/prompt reports plain BM25F beside it and, with --heldout, a
 * public set the table never saw; test/prompt/lexicon.test.ts uses requests that are not in the
 * bench. It names no tool and special-cases no request. No model, no network: a table and a scan.
 *
 * No single-word form is one of the shortlist's stop words ("show", "off"): a request says them
 * about anything.
 *
 * One concept a line: `english words = surface forms, comma-separated`. A Latin surface form of one
 * word matches a request word equal to it or, from five letters, one it begins ("reservar" →
 * reservarla); one of several words matches those words in a row; a form in another script
 * (Hangul, Han, kana) matches anywhere in the request, as those languages are written without spaces
 * or with particles attached.
 */
export const TABLE = `
message send = whisper, ping, text, dm, holler, shoot a note, drop a line, let know, mensaje, pesan, kirim, 메시지, 문자, 보내, 消息, 发条, 发个, 发消息, 告诉, 短信, メッセージ, 送って, 伝えて
message post channel = announce, broadcast, let everybody, tell everyone, tell the team, everybody, everyone, 공지, 群里, 大家, みんなに
email = e-mail, correo, surel, 이메일, 메일, 邮件, 电子邮件, メール
inbox = received, bandeja, kotak masuk, 받은 편지함, 收件箱, 受信
status busy away disturb notifications = heads-down, heads down, do not disturb, dnd, focus time, deep work, busy, 방해 금지, 勿扰, 忙
mention = pinged, tagged, 멘션, 提到我
call phone = ring, telepon, 전화, 打电话, 電話
reminder remind = remember, nudge me, dont let me forget, recordar, recuérdame, ingatkan, ingat, 알려 줘, 잊지, 알림, 提醒, 别忘了, リマインド, 思い出させ
calendar schedule event = agenda, diary, free, availability, busy, jadwal, kalender, calendario, 일정, 약속, 캘린더, 日程, 日历, 有空, 安排, 予定, カレンダー
meeting = sync, standup, huddle, reunión, rapat, 회의, 미팅, 会议, 开会, 会議, ミーティング
transcript = minutes, what was said, 회의록, 会议记录, 纪要, 文字起こし, 議事録
video call link = face-to-face, face to face, hop on a call, hop into, video chat, zoom, videollamada, 화상, 视频会议, ビデオ通話
note create = jot, jot down, write down, scribble, memo, nota, notas, apunta, apuntar, catat, catatan, 메모, 적어, 笔记, 记下, 备忘, メモ, 書いて
todo task = chore, errand, to-do, tarea, tugas, 할 일, 할일, 待办, 任务, タスク, やること
complete done = cross off, tick off, check off, finished, selesai, terminado, 완료, 끝냈, 完成, 做完, 完了
search find = look up, dig out, dig up, hunt for, where is, buscar, cari, carikan, 찾아, 검색, 找, 查, 搜索, 探して, 検索
photo = snaps, snapshots, pics, pictures, shots, foto, fotos, 사진, 照片, 相片, 写真
album share = slideshow, 앨범, 相册, アルバム
password = passcode, secret, passphrase, contraseña, kata sandi, 비밀번호, 密码, パスワード
login = sign-in, sign in, log in, credentials, account details, 로그인, 登录, 账号, ログイン
breach = leaked, hacked, pwned, compromised, exposed, 유출, 泄露, 漏洩
generate = cook up, come up with, make up, create, uncrackable
translate = say in, how do you say, in japanese, in spanish, in french, in english, in german, traducir, terjemahkan, 번역, 영어로, 翻译, 英文, 翻訳, 英語で
language = japanese, spanish, french, german, korean, chinese, portuguese, english
news headlines = big story, whats happening, top stories, noticias, berita, 뉴스, 新闻, 头条, ニュース
weather forecast rain = umbrella, raincoat, sunny, snow, cold out, hot out, lluvia, clima, hujan, cuaca, 비 와, 날씨, 비가, 눈이, 天气, 下雨, 天気, 雨
air quality = smog, smoggy, haze, hazy, pollution, smoke, kualitas udara, udara, 미세먼지, 공기, 空气, 雾霾, 大気
temperature thermostat heating = warmer, cooler, freezing, chilly, too cold, too hot, heat, degrees, suhu, temperatura, 온도, 난방, 温度, 度, 暖房, 冷房
lights = dark, pitch black, lamp, bright, dim, luz, luces, lampu, 불, 조명, 灯, 電気, ライト
lock door = secured, bolt, entrance, front door, deadbolt, kunci, pintu, cerradura, 잠가, 문, 锁, 门, 鍵
camera = cctv, doorbell, who is at the door, kamera, 카메라, 摄像头, カメラ
energy usage electricity = power bill, electric bill, kwh, listrik, electricidad, 전기, 전력, 用电, 电费, 電気代
music play = tune in, tunes, songs, song, playlist, jam, lagu, putar, música, canción, 노래, 음악, 틀어, 音乐, 歌, 播放, 音楽, 曲
pause = shush, mute, quiet, silence, hush, stop the music, jeda, 멈춰, 暂停, 一時停止
car vehicle battery charge = ev, juice left, range, tesla, model 3, mobil, coche, 차, 자동차, 汽车, 车, 車
precondition climate = warm up my car, warm up the car, defrost, 예열, 预热
restart reboot = bounce, kick, cycle, power cycle, reiniciar, 재시작, 重启, 再起動
instance server = box, vm, machine, host, node, web box, servidor, 서버, 服务器, サーバー
scale replicas = more copies, traffic spike, capacity, scale out, spin up, 扩容, 확장
cloud cost = hosting bill, aws bill, infrastructure spend, 호스팅, 云费用
alert incident = paged, page, outage, down, on fire, 장애, 告警, 障害
logs = tail, stack trace, 로그, 日志, ログ
package shipment track = parcel, courier, delivery, box would come, where is my order, tracking number, paket, kiriman, paquete, 택배, 운송장, 배송, 快递, 包裹, 物流, 荷物, 配達
travel entry requirements visa = paperwork, passport, documents to enter, border, 비자, 签证, ビザ
flight = plane, airline, fly, flying, boarding, vuelo, penerbangan, pesawat, 항공편, 비행기, 航班, 机票, 飞机, 航空便, 飛行機
delay status = running late, late, on time, delayed, retrasado, terlambat, 지연, 延误, 晚点, 遅延
hotel = somewhere to crash, place to stay, stay, lodging, accommodation, airbnb, motel, hostel, penginapan, hotél, 숙소, 호텔, 酒店, 住宿, 宿, ホテル
directions route = how do i get, how do i reach, get to, commute, by bus, by train, drive to, perjalanan, ruta, cómo llegar, 가는 길, 길 찾기, 怎么去, 路线, 行き方
airport = bandara, aeropuerto, 공항, 机场, 空港
nearby places = close by, near me, around here, pop into, drugstore, pharmacy, gas station, terdekat, cerca, 근처, 주변, 附近, 加油站, 近く
restaurant reserve table = book a table, get us a table, dinner for, restoran, restaurante, 식당, 레스토랑, 餐厅, 饭店, レストラン
reserve book = reservar, pesan, 예약, 预订, 订, 予約
substitute = instead of, in its place, replace, swap for, no sour cream, out of, sustituto, pengganti, 대체, 代替, 替わり
recipe shopping list = grocery list, ingredients to buy, daftar belanja, belanja, lista de compras, 장보기, 购物清单, 買い物リスト
recipe = cook, dish, resep, receta, 레시피, 요리, 菜谱, 食谱, レシピ
training plan = get ready for, prepare for, marathon, 42k, half marathon, 10k, 5k, couch to, programa, 훈련, 训练计划, トレーニング
sleep = snooze, slept, nap, rest, tidur, dormir, 잠, 수면, 睡眠, 睡, 睡眠時間
class book fitness = spin, spin class, cycling session, yoga, pilates, gym class, workout session, kelas, clase, 요가, 수업, 瑜伽, 课, ヨガ, クラス
workout exercise = run, ran, jog, lift, gym, olahraga, ejercicio, 운동, 锻炼, 运动, 運動
leave balance time off vacation = holidays, holiday, days off, pto, annual leave, cuti, vacaciones, 휴가, 연차, 假期, 年假, 休假, 休暇, 有給
payslip salary = paycheck, pay stub, wages, gaji, nómina, 급여, 월급, 工资, 給料
unit tenant rent = occupants, renters, lodgers, coughed up, paid rent, penyewa, inquilino, 세입자, 월세, 租客, 房租, 入居者
maintenance repair = leaking, leak, broken, fix, plumber, clogged, perbaikan, reparación, 수리, 고장, 维修, 修理
stock quote price = share price, shares, ticker, how is doing, trading, saham, acciones, 주가, 주식, 股价, 股票, 株価
portfolio investments = stocks and funds, holdings, investments, my funds, 401k, portofolio, 포트폴리오, 投资组合, 持仓
net worth = richer, wealthier, worth, how rich, kekayaan, patrimonio, 순자산, 净资产, 純資産
money send pay = beam, venmo, zelle, wire, bucks, transfer, kirim uang, enviar dinero, 송금, 보내 줘, 원 보내, 转账, 付钱, 送金
request money = settled up, owes me, owe me, pay me back, chase, nudge, collect, tagih, cobrar, 받을 돈, 催款, 要钱, 請求
expense split = go halves, split the bill, share the cost, patungan, dividir, 나눠, 分摊, AA, 割り勘
finance transactions spending spent = charged, charges, purchases, how much did i spend, gastado, gasté, gasto, pengeluaran, 지출, 카드값, 花了, 消费, 支出, 使った
account balance = saldo, rekening, tabungan, cuenta, 잔액, 계좌, 余额, 账户, 残高, 口座
credit card = tarjeta, kartu kredit, 카드, 信用卡, クレジットカード
bills due pay = due, owe, payment due, deadline to pay, tagihan, bayar, factura, vencimiento, 납부, 내야, 청구서, 账单, 到期, 缴费, 支払い, 請求書
invoice = bill a client, charge a client, faktur, factura, 인보이스, 发票, 請求書
tickets event concert = gig, game, match, seats, spots, tiket, konser, entradas, concierto, 콘서트, 티켓, 演唱会, 门票, 票, コンサート, チケット
buy purchase = grab, get us, pick up, snag, beli, comprar, 구매, 사, 买, 購入
assignments homework = turn in, hand in, due for school, coursework, tugas sekolah, tarea, 숙제, 과제, 作业, 宿題
grades = report card, marks, nilai, notas escolares, 성적, 成绩, 成績
teacher = school, sekolah, guru, maestro, profesor, 선생님, 학교, 老师, 学校, 先生
lab results = bloodwork, blood test, cholesterol, labs, test results, hasil lab, análisis, 검사 결과, 혈액, 化验, 检查结果, 検査結果
medications prescription refill = meds, pills, drugs, medicine, obat, medicina, receta médica, 약, 처방, 药, 降压药, 续, 薬, 処方
doctor provider = physician, dentist, clinic, gp, dokter, médico, 의사, 병원, 치과, 医生, 医院, 牙医, 医者, 歯医者
ticket support help desk = complaint, issue with, customer problem, tiket bantuan, bantuan, pelanggan, soporte, 고객, 문의, 客服, 工单, 投诉, 問い合わせ
customer = client, buyer, pelanggan, cliente, 고객, 客户, 顧客
damaged = broken, rusak, roto, 파손, 损坏, 破損
order = purchase, pesanan, pedido, 주문, 订单, 外卖, 注文
food delivery = takeout, take-out, takeaway, delivery, doordash, ubereats, 배달, 外卖, 出前
calculate arithmetic evaluate = how much is, how many, what does each, total, altogether, in all, percent, per cent, split, each person, owe, left over, remaining, average, sum, mileage, gross pay, overtime, discount, tip, tax, divide, times, quarter, half, hitung, calcular, 계산, 计算, 計算
convert units = grams, gram, ounces, ounce, kilos, kilo, kilograms, pounds, lbs, kilometres, kilometers, km, miles, mile, inches, inch, feet, foot, metres, meters, centimetres, celsius, fahrenheit, gallons, litres, liters, cups, tablespoons, mph, kph, 단위, 换算, 换成, 換算
currency convert exchange rate = euros, euro, yen, baht, dollars, dollar, pounds sterling, pesos, rupiah, won, yuan, rmb, francs, rupees, in dollars, 환율, 汇率, 为替
date days between = days old, how many days, how many weeks, how many nights, years and months, ago, since, until, anniversary, born on, birthday, runs out, expires, from the start, berapa hari, cuántos días, 며칠, 几天, 何日
time zone clock = my time, her time, his time, their time, local time, kicks off, what time is that, time difference, zona waktu, hora en, 시차, 时差, 時差
loan mortgage = borrowing, borrow, financing, monthly payment, pinjaman, préstamo, hipoteca, 대출, 贷款, ローン
savings interest = put aside, put away, sits in an account, earning, compound, grow to, nest egg, menabung, ahorro, 저축, 이자, 存款, 利息, 貯金
podcast = episode, 팟캐스트, 播客, ポッドキャスト
contract sign = signature, e-sign, docusign, firmar, tanda tangan, 계약, 서명, 合同, 签字, 契約
wiki page docs = documentation, knowledge base, handbook, 위키, 文档, ドキュメント
code repository pull request = pr, merge, branch, commit, diff, github, 코드, 代码, コード
file = document, documents, archivo, berkas, 파일, 文件, ファイル
`;

/** A table of the lexicon: a Map (parseLexicon) or its packed form (the one a process reads). */
export interface Lookup {
  get(key: string): readonly string[] | undefined;
  has(key: string): boolean;
  keys(): IterableIterator<string>;
  readonly size: number;
}

export interface Lexicon {
  /** Latin single words → the concepts' English words. */
  words: Lookup;
  /** The same by their stem ("pinging" meets ping, "leaking" leak). */
  stemmed: Lookup;
  /** Latin phrases (several words) → English words. */
  phrases: Lookup;
  /** Each phrase's first word, and the most words a phrase has. */
  phraseStarts: Pick<Lookup, 'has' | 'keys' | 'size'>;
  phraseWords: number;
  /** Forms in other scripts, matched anywhere. */
  scripts: Lookup;
  /** The non-Latin forms by their first character, longest first. */
  scriptStarts: Lookup;
}

const LATIN = /^[a-z0-9 '\-áéíóúñü]+$/;
/** Lower case without accents ("Cuánto" → cuanto) and without apostrophes ("what's" → whats). */
const fold = (s: string) =>
  (/[^\t\n\r -~]/.test(s) ? s.normalize('NFD').replace(/[\u0300-\u036f]/g, '') : s).toLowerCase().replace(/['’]/g, '');

function push(map: Map<string, string[]>, key: string, values: readonly string[]): void {
  const had = map.get(key);
  map.set(key, had ? [...new Set([...had, ...values])] : [...values]);
}

/** The lexicon parsed into Maps and a Set (what lexicon-data.ts packs). */
interface ParsedLexicon extends Lexicon {
  words: Map<string, string[]>;
  stemmed: Map<string, string[]>;
  phrases: Map<string, string[]>;
  phraseStarts: Set<string>;
  scripts: Map<string, string[]>;
  scriptStarts: Map<string, string[]>;
}

export function parseLexicon(table: string): ParsedLexicon {
  const lex: ParsedLexicon = {
    words: new Map(),
    stemmed: new Map(),
    phrases: new Map(),
    phraseStarts: new Set(),
    phraseWords: 1,
    scripts: new Map(),
    scriptStarts: new Map(),
  };
  for (const line of table.split('\n')) {
    const at = line.indexOf('=');
    if (at < 0) continue;
    const english = line.slice(0, at).trim().split(/\s+/).filter(Boolean);
    for (const raw of line.slice(at + 1).split(',')) {
      const form = raw.trim();
      if (!form) continue;
      const f = fold(form);
      if (LATIN.test(f)) {
        const words = f.split(/[\s-]+/).filter(Boolean);
        if (words.length === 1) {
          push(lex.words, words[0], english);
          push(lex.stemmed, stemmer(words[0]), english);
        } else {
          push(lex.phrases, words.join(' '), english);
          lex.phraseStarts.add(words[0]);
          lex.phraseWords = Math.max(lex.phraseWords, words.length);
        }
      } else push(lex.scripts, form, english);
    }
  }
  for (const form of [...lex.scripts.keys()].sort((a, b) => b.length - a.length)) {
    const first = form[0];
    lex.scriptStarts.set(first, [...(lex.scriptStarts.get(first) ?? []), form]);
  }
  return lex;
}

/*
 * Issue 49: a process reads the lexicon packed, not parsed. Each table is one string of entries,
 * `\u0001key\u0002value\u0003value…`, and a look-up is a search of that string, remembered per key:
 * turning the whole table into Maps on a cold process's first shortlisted request (a JSON parse of
 * ~2,000 small arrays, then the Maps) was ~4 ms of it, and most requests look up a dozen words.
 */
const ENTRY = '\u0001';
const VALUE = '\u0002';
const NEXT = '\u0003';
export type PackedLexicon = Record<'words' | 'stemmed' | 'phrases' | 'phraseStarts' | 'scripts' | 'scriptStarts', string> & {
  phraseWords: number;
};

/** The parsed lexicon as lexicon-data.ts holds it (`npm run lexicon` writes it; a test compares). */
export function packLexicon(lex: ParsedLexicon): PackedLexicon {
  const pack = (m: Map<string, string[]> | Set<string>) =>
    [...m.entries()].map(([k, v]) => (Array.isArray(v) ? `${ENTRY}${k}${VALUE}${v.join(NEXT)}` : `${ENTRY}${k}${VALUE}`)).join('') + ENTRY;
  return {
    words: pack(lex.words),
    stemmed: pack(lex.stemmed),
    phrases: pack(lex.phrases),
    phraseStarts: pack(lex.phraseStarts),
    phraseWords: lex.phraseWords,
    scripts: pack(lex.scripts),
    scriptStarts: pack(lex.scriptStarts),
  };
}

/** A packed table as a Lookup: keys never hold the three separators (a table line's words and forms). */
function packed(text: string): Lookup {
  const memo = new Map<string, readonly string[] | null>();
  const get = (key: string): readonly string[] | undefined => {
    let hit = memo.get(key);
    if (hit === undefined) {
      const at = key.includes(ENTRY) || key.includes(VALUE) ? -1 : text.indexOf(`${ENTRY}${key}${VALUE}`);
      if (at < 0) hit = null;
      else {
        const from = at + key.length + 2;
        const value = text.slice(from, text.indexOf(ENTRY, from));
        hit = value === '' ? [] : value.split(NEXT);
      }
      if (memo.size > 20_000) memo.clear(); // requests bring new words forever
      memo.set(key, hit);
    }
    return hit ?? undefined;
  };
  let keys: string[] | undefined;
  const all = () =>
    (keys ??= text
      .split(ENTRY)
      .slice(1, -1)
      .map((e) => e.slice(0, e.indexOf(VALUE))));
  return {
    get,
    has: (key) => get(key) !== undefined,
    keys: () => all()[Symbol.iterator](),
    get size() {
      return all().length;
    },
  };
}

/**
 * The table, on first use: its parse kept packed in lexicon-data.ts — parsing the table (folding
 * and stemming ~1,100 forms) was ~10-20 ms of a cold process's first shortlisted request, and
 * reading it back as Maps ~4 ms (issue 49). test/prompt/lexicon.test.ts fails when the kept parse
 * is not the table's.
 */
let kept: Lexicon | undefined;
export const lexicon = (): Lexicon =>
  (kept ??= {
    words: packed(LEXICON.words),
    stemmed: packed(LEXICON.stemmed),
    phrases: packed(LEXICON.phrases),
    phraseStarts: packed(LEXICON.phraseStarts),
    phraseWords: LEXICON.phraseWords,
    scripts: packed(LEXICON.scripts),
    scriptStarts: packed(LEXICON.scriptStarts),
  });

/** Request words' stems, remembered (bounded: requests bring new words forever). */
const stemMemo = new Map<string, string>();
function stemOf(w: string): string {
  let s = stemMemo.get(w);
  if (s === undefined) {
    if (stemMemo.size > 20_000) stemMemo.clear();
    stemMemo.set(w, (s = stemmer(w)));
  }
  return s;
}

const NUMBER = /\d+(?:[.,:]\d+)*/g;
const NUMBERS_ASKED = /\?|\bhow (?:much|many|long|far)\b|\bwhat(?:s| is| does)\b|\bwhich\b/;

/**
 * The English words the lexicon adds for `text`: the concepts of the words, phrases and
 * other-script forms in it. Bounded: at most `limit` words come back (a long text mentions
 * everything).
 */
export function expansions(text: string, lex: Lexicon = lexicon(), limit = 48): string[] {
  const out = new Set<string>();
  const add = (ws: readonly string[] | undefined) => {
    if (ws) for (const w of ws) if (out.size < limit) out.add(w);
  };
  const folded = fold(text);
  const words = folded.split(/[^a-z0-9]+/).filter(Boolean);
  for (let i = 0; i < words.length && out.size < limit; i++) {
    const w = words[i];
    const exact = lex.words.get(w) ?? (/\d/.test(w) ? undefined : lex.stemmed.get(stemOf(w)));
    if (exact) add(exact);
    else if (w.length > 5) {
      // The longest table word of five letters or more that begins w ("reservarla" → reservar).
      for (let n = w.length - 1; n >= 5; n--) {
        const hit = lex.words.get(w.slice(0, n));
        if (hit) {
          add(hit);
          break;
        }
      }
    }
    if (!lex.phraseStarts.has(w)) continue;
    let phrase = w;
    for (let k = 1; k < lex.phraseWords && i + k < words.length; k++) {
      phrase += ` ${words[i + k]}`;
      add(lex.phrases.get(phrase));
    }
  }
  // A story problem: two numbers or more and a question about them ("… $18 and … $12. Which gets me more?").
  if (NUMBERS_ASKED.test(folded) && (folded.match(NUMBER) ?? []).length >= 2) add(['calculate', 'arithmetic', 'evaluate']);
  // Other scripts: at each character the longest form that starts there, then past it (예약 is a booking, not 약 medicine).
  if (/[^\p{Script=Latin}\p{P}\p{N}\s]/u.test(text)) {
    for (let i = 0; i < text.length && out.size < limit; i++) {
      const forms = lex.scriptStarts.get(text[i]);
      const form = forms?.find((f) => text.startsWith(f, i));
      if (form) {
        add(lex.scripts.get(form));
        i += form.length - 1;
      }
    }
  }
  return [...out];
}
